//! Synthetic sites shaped after the page-load studies (being written).
