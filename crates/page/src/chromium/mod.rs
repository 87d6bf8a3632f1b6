//! Headless Chromium over the DevTools protocol (being written).
