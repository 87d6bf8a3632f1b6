//! A command's typed flags as text, field by field, through their serde
//! `Serialize`: what each field gives a command line (a switch, or the
//! text of each of its values). The spelling of the flags is clap's, not
//! this module's; it only knows the values.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;

use serde::ser::{self, Impossible, Serialize};

/// What one field gives its flag.
#[derive(Debug, PartialEq)]
pub(super) enum Given {
    /// A `bool`: the flag alone when on.
    Switch(bool),
    /// The text of each value: none for `None` or an empty list.
    Values(Vec<OsString>),
}

/// Each field of `flags` (a struct, or a map when it flattens another) by
/// its name.
pub(super) fn fields<T: Serialize + ?Sized>(flags: &T) -> Result<BTreeMap<String, Given>, Error> {
    flags.serialize(Fields::default())
}

/// Why a value has no command-line text.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn not_text(what: &str) -> Error {
    Error(format!(
        "a flag's value is text, a number, a switch or a list of them, not {what}"
    ))
}

/// The `Serializer` methods of a kind of value a serializer refuses,
/// each failing with `refusal`.
macro_rules! serialize_nothing_else {
    ($ok:ty, $refusal:expr) => {
        fn serialize_bool(self, _: bool) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_i8(self, _: i8) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_i16(self, _: i16) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_i32(self, _: i32) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_i64(self, _: i64) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_u8(self, _: u8) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_u16(self, _: u16) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_u32(self, _: u32) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_u64(self, _: u64) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_f32(self, _: f32) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_f64(self, _: f64) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_char(self, _: char) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_str(self, _: &str) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_bytes(self, _: &[u8]) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_none(self) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_unit(self) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
        ) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<$ok, Error> {
            Err($refusal)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
            Err($refusal)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
            Err($refusal)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, Error> {
            Err($refusal)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, Error> {
            Err($refusal)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, Error> {
            Err($refusal)
        }
    };
}

/// The top level: a struct's fields, or a map's entries (serde's
/// `flatten` writes a map).
#[derive(Default)]
struct Fields {
    fields: BTreeMap<String, Given>,
    key: Option<String>,
}

impl ser::Serializer for Fields {
    type Ok = BTreeMap<String, Given>;
    type Error = Error;
    type SerializeSeq = Impossible<Self::Ok, Error>;
    type SerializeTuple = Impossible<Self::Ok, Error>;
    type SerializeTupleStruct = Impossible<Self::Ok, Error>;
    type SerializeTupleVariant = Impossible<Self::Ok, Error>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<Self::Ok, Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Error> {
        Ok(self)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, Error> {
        Ok(self)
    }

    serialize_nothing_else!(
        BTreeMap<String, Given>,
        Error("a command's flags are a struct".to_string())
    );
}

impl ser::SerializeStruct for Fields {
    type Ok = BTreeMap<String, Given>;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.fields.insert(key.to_string(), value.serialize(Value)?);
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, Error> {
        Ok(self.fields)
    }
}

impl ser::SerializeMap for Fields {
    type Ok = BTreeMap<String, Given>;
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let Given::Values(mut text) = key.serialize(Value)? else {
            return Err(not_text("a switch as a field's name"));
        };
        let key = text.pop().and_then(|key| key.into_string().ok());
        self.key = Some(key.ok_or_else(|| not_text("a field name that is not text"))?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().expect("serde gives a key before its value");
        self.fields.insert(key, value.serialize(Value)?);
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, Error> {
        Ok(self.fields)
    }
}

/// One field's value.
struct Value;

/// A list's values.
#[derive(Default)]
struct List(Vec<OsString>);

fn text(value: impl fmt::Display) -> Result<Given, Error> {
    Ok(Given::Values(vec![value.to_string().into()]))
}

impl ser::Serializer for Value {
    type Ok = Given;
    type Error = Error;
    type SerializeSeq = List;
    type SerializeTuple = Impossible<Given, Error>;
    type SerializeTupleStruct = Impossible<Given, Error>;
    type SerializeTupleVariant = Impossible<Given, Error>;
    type SerializeMap = Impossible<Given, Error>;
    type SerializeStruct = Impossible<Given, Error>;
    type SerializeStructVariant = Impossible<Given, Error>;

    fn serialize_bool(self, on: bool) -> Result<Given, Error> {
        Ok(Given::Switch(on))
    }

    fn serialize_i64(self, v: i64) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_u64(self, v: u64) -> Result<Given, Error> {
        text(v)
    }

    // Rust prints the shortest text that reads back to the same float.
    fn serialize_f64(self, v: f64) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_char(self, v: char) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_str(self, v: &str) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_none(self) -> Result<Given, Error> {
        Ok(Given::Values(Vec::new()))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Given, Error> {
        value.serialize(self)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Given, Error> {
        text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Given, Error> {
        value.serialize(self)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<List, Error> {
        Ok(List::default())
    }

    fn serialize_i8(self, v: i8) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_i16(self, v: i16) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_i32(self, v: i32) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_u8(self, v: u8) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_u16(self, v: u16) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_u32(self, v: u32) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_f32(self, v: f32) -> Result<Given, Error> {
        text(v)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<Given, Error> {
        Err(not_text("bytes"))
    }

    fn serialize_unit(self) -> Result<Given, Error> {
        Err(not_text("()"))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<Given, Error> {
        Err(not_text(name))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Given, Error> {
        // An `OsString` that is not UTF-8 comes here as `Unix(bytes)`.
        Err(not_text(&format!(
            "a {name} variant with a value (a path must be UTF-8 to be passed on)"
        )))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_text("a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_text(name))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_text(name))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_text("a map"))
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(not_text(&format!(
            "the struct {name} (give its field `serialize_with` its text)"
        )))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_text(name))
    }
}

impl ser::SerializeSeq for List {
    type Ok = Given;
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match value.serialize(Value)? {
            Given::Values(values) => self.0.extend(values),
            Given::Switch(_) => return Err(not_text("a list of switches")),
        }
        Ok(())
    }

    fn end(self) -> Result<Given, Error> {
        Ok(Given::Values(self.0))
    }
}
