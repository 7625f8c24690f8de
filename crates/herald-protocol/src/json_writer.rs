//! A JSON serializer for the hot paths (every event is written once to the
//! store and once to `--json` output): the same bytes as
//! `serde_json::to_writer`, with strings escaped by [`push_json_str`], which
//! finds the characters to escape 16 bytes at a time. Numbers, bytes and
//! anything unusual are written by serde_json itself, so they cannot differ.

use serde::ser::{self, Serialize};

use crate::push_json_str;

/// Appends `value` as compact JSON, exactly as `serde_json::to_writer` would.
///
/// # Errors
/// What serde_json would refuse: a map key that is not a string or a number,
/// or a `Serialize` impl that fails.
pub fn write_json<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    value.serialize(Json { out })
}

/// [`write_json`] into a new string.
///
/// # Errors
/// As [`write_json`].
pub fn to_json_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    write_json(&mut out, value)?;
    // Only valid UTF-8 is ever written: JSON punctuation, serde_json's own
    // output and the bytes of `&str`s.
    String::from_utf8(out).map_err(ser::Error::custom)
}

struct Json<'a> {
    out: &'a mut Vec<u8>,
}

impl Json<'_> {
    /// Writes a scalar with serde_json's own serializer.
    fn by_serde_json<T: Serialize + ?Sized>(self, value: &T) -> Result<(), serde_json::Error> {
        serde_json::to_writer(&mut *self.out, value)
    }
}

/// An open array or object: whether a comma goes before the next element,
/// and what closes it.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    close: &'static [u8],
}

impl<'a> Compound<'a> {
    fn open(out: &'a mut Vec<u8>, open: &[u8], close: &'static [u8]) -> Self {
        out.extend_from_slice(open);
        Self {
            out,
            first: true,
            close,
        }
    }

    fn comma(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.out.push(b',');
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        self.comma();
        value.serialize(Json {
            out: &mut *self.out,
        })
    }

    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.comma();
        push_json_str(self.out, key);
        self.out.push(b':');
        value.serialize(Json {
            out: &mut *self.out,
        })
    }

    fn end(self) -> Result<(), serde_json::Error> {
        self.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// Opens `{"variant":` + `open`, closed by `close` + `}`.
fn open_variant<'a>(
    out: &'a mut Vec<u8>,
    variant: &str,
    open: &[u8],
    close: &'static [u8],
) -> Compound<'a> {
    out.push(b'{');
    push_json_str(out, variant);
    out.push(b':');
    Compound::open(out, open, close)
}

impl<'a> ser::Serializer for Json<'a> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        self.by_serde_json(&v)
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        push_json_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        push_json_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        ser::Serializer::serialize_bytes(&mut serde_json::Serializer::new(&mut *self.out), v)
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Self::Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        // serde_json's `RawValue` (and anything else serde_json treats
        // specially by name) is written by serde_json.
        if name.starts_with("$serde_json") {
            return serde_json::to_writer(&mut *self.out, value);
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.out.push(b'{');
        push_json_str(self.out, variant);
        self.out.push(b':');
        value.serialize(Json {
            out: &mut *self.out,
        })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Self::Error> {
        Ok(Compound::open(self.out, b"[", b"]"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, Self::Error> {
        Ok(Compound::open(self.out, b"[", b"]"))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(Compound::open(self.out, b"[", b"]"))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(open_variant(self.out, variant, b"[", b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Self::Error> {
        Ok(Compound::open(self.out, b"{", b"}"))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(Compound::open(self.out, b"{", b"}"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(open_variant(self.out, variant, b"{", b"}}"))
    }
}

/// The four ways serde writes array elements, all the same here.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Self::Error> {
                Compound::end(self)
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.comma();
        if key
            .serialize(StrKey {
                out: &mut *self.out,
            })
            .is_err()
        {
            // Numbers and booleans are quoted as serde_json quotes them:
            // by serde_json, from the map `{key:0}` it writes.
            let one = serde_json::to_vec(&OneEntry(key))?;
            let text = one
                .strip_prefix(b"{")
                .and_then(|rest| rest.strip_suffix(b":0}"))
                .ok_or_else(|| ser::Error::custom("key must be a string"))?;
            self.out.extend_from_slice(text);
        }
        self.out.push(b':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        value.serialize(Json {
            out: &mut *self.out,
        })
    }
    fn end(self) -> Result<(), Self::Error> {
        Compound::end(self)
    }
}

/// Struct fields, in and out of an enum variant.
macro_rules! fields {
    ($($trait:ident),*) => {
        $(impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Self::Error> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Self::Error> {
                Compound::end(self)
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

/// A map of one entry, `key` to 0: how serde_json writes `key` as a map key.
struct OneEntry<'a, K: ?Sized>(&'a K);

impl<K: Serialize + ?Sized> Serialize for OneEntry<'_, K> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &0)?;
        map.end()
    }
}

/// Writes a map key that is a string; refuses anything else, writing
/// nothing, for [`OneEntry`] to write.
struct StrKey<'a> {
    out: &'a mut Vec<u8>,
}

/// Returned by [`StrKey`] for every key that is not a string.
#[derive(Debug)]
struct NotStr;

impl std::fmt::Display for NotStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a string key")
    }
}

impl std::error::Error for NotStr {}

impl ser::Error for NotStr {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        NotStr
    }
}

macro_rules! refuse {
    ($($name:ident($($arg:ty),*);)*) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), NotStr> { Err(NotStr) })*
    };
}

impl ser::Serializer for StrKey<'_> {
    type Ok = ();
    type Error = NotStr;
    type SerializeSeq = ser::Impossible<(), NotStr>;
    type SerializeTuple = ser::Impossible<(), NotStr>;
    type SerializeTupleStruct = ser::Impossible<(), NotStr>;
    type SerializeTupleVariant = ser::Impossible<(), NotStr>;
    type SerializeMap = ser::Impossible<(), NotStr>;
    type SerializeStruct = ser::Impossible<(), NotStr>;
    type SerializeStructVariant = ser::Impossible<(), NotStr>;

    fn serialize_str(self, v: &str) -> Result<(), NotStr> {
        push_json_str(self.out, v);
        Ok(())
    }

    refuse! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), NotStr> {
        Err(NotStr)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotStr> {
        Err(NotStr)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotStr> {
        Err(NotStr)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotStr> {
        Err(NotStr)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotStr> {
        Err(NotStr)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotStr> {
        Err(NotStr)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotStr> {
        Err(NotStr)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotStr> {
        Err(NotStr)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotStr> {
        Err(NotStr)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotStr> {
        Err(NotStr)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::json;

    use super::*;

    fn same<T: Serialize>(value: &T) {
        assert_eq!(
            to_json_string(value).unwrap(),
            serde_json::to_string(value).unwrap()
        );
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Tagged {
        Unit,
        Fields { text: String, n: i64, ratio: f64 },
        Wrapped(Inner),
    }

    #[derive(Serialize)]
    struct Inner {
        name: &'static str,
        #[serde(flatten)]
        extra: BTreeMap<String, serde_json::Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        absent: Option<u8>,
        present: Option<char>,
    }

    #[derive(Serialize)]
    enum Outer {
        Plain,
        Newtype(u32),
        Tuple(i8, String),
        Struct { bytes: Vec<u8>, unit: () },
    }

    #[derive(Serialize)]
    struct Newtype(String);

    #[test]
    fn values_of_every_shape_are_written_as_serde_json_writes_them() {
        same(&json!({
            "text": "quote \" backslash \\ newline \n control \u{1} é 😀",
            "numbers": [0, -1, u64::MAX, i64::MIN, 1.5, 1e300, -0.0, 0.1],
            "nested": {"empty": {}, "list": [], "null": null, "yes": true, "no": false}
        }));
        same(&Tagged::Unit);
        same(&Tagged::Fields {
            text: "tab\there".into(),
            n: -7,
            ratio: 0.333,
        });
        same(&Tagged::Wrapped(Inner {
            name: "inner",
            extra: BTreeMap::from([("k\"ey".to_owned(), json!([1, "two"]))]),
            absent: None,
            present: Some('\n'),
        }));
        for outer in [
            Outer::Plain,
            Outer::Newtype(3),
            Outer::Tuple(-1, "t".into()),
            Outer::Struct {
                bytes: vec![0, 255],
                unit: (),
            },
        ] {
            same(&outer);
        }
        same(&Newtype("x".repeat(40)));
        same(&(1u8, 'c', f32::NAN, f64::INFINITY));
        same(&BTreeMap::from([(1i32, "one"), (-2, "minus two")]));
        same(&BTreeMap::from([(true, 1), (false, 0)]));
        same(&BTreeMap::from([('c', 1)]));
    }

    #[test]
    fn keys_serde_json_refuses_are_refused() {
        let map = BTreeMap::from([(vec![1], 1)]);
        assert!(serde_json::to_string(&map).is_err());
        assert!(to_json_string(&map).is_err());
    }
}
