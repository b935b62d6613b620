//! A serde `Serializer` whose output is a [`Node`]: typed objects become the same insertion-
//! ordered tree `map!` builds, so the one YAML writer (`render::yaml`) writes them, byte for
//! byte as before. Struct fields keep their declaration order; absent values vanish.

use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::render::node::Node;

/// `value` as a [`Node`].
pub fn to_node<T: Serialize + ?Sized>(value: &T) -> Node {
    value
        .serialize(NodeSerializer)
        .expect("typed objects hold strings, numbers, booleans, maps and sequences only")
}

/// Why a value has no [`Node`] (bytes, a map key that is not a string, a number beyond i64).
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

struct NodeSerializer;

/// The entries of a map or struct being built; `Absent` values are left out, as `map!` does.
struct MapBuilder {
    entries: Vec<(String, Node)>,
    key: Option<String>,
    /// For a struct variant: the variant that wraps the map.
    variant: Option<&'static str>,
}

impl MapBuilder {
    fn push(&mut self, key: String, value: Node) {
        if value != Node::Absent {
            self.entries.push((key, value));
        }
    }

    fn finish(self) -> Node {
        let map = Node::Map(self.entries);
        match self.variant {
            Some(v) => Node::Map(vec![(v.to_string(), map)]),
            None => map,
        }
    }
}

/// The items of a sequence being built.
struct SeqBuilder {
    items: Vec<Node>,
    /// For a tuple variant: the variant that wraps the sequence.
    variant: Option<&'static str>,
}

impl SeqBuilder {
    fn finish(self) -> Node {
        let seq = Node::Seq(self.items);
        match self.variant {
            Some(v) => Node::Map(vec![(v.to_string(), seq)]),
            None => seq,
        }
    }
}

impl ser::Serializer for NodeSerializer {
    type Ok = Node;
    type Error = Error;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = SeqBuilder;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = MapBuilder;

    fn serialize_bool(self, v: bool) -> Result<Node, Error> {
        Ok(Node::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Node, Error> {
        Ok(Node::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Node, Error> {
        i64::try_from(v)
            .map(Node::Int)
            .map_err(|_| Error(format!("{v} is beyond a 64-bit signed integer")))
    }
    fn serialize_f32(self, v: f32) -> Result<Node, Error> {
        Ok(Node::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Node, Error> {
        Ok(Node::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Node, Error> {
        Ok(Node::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Node, Error> {
        Ok(Node::Str(v.to_string()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Node, Error> {
        Err(Error("bytes have no YAML form here".into()))
    }
    fn serialize_none(self) -> Result<Node, Error> {
        Ok(Node::Absent)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Node, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Node, Error> {
        Ok(Node::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Node, Error> {
        Ok(Node::Null)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<Node, Error> {
        Ok(Node::Str(variant.to_string()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<Node, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Node, Error> {
        Ok(Node::Map(vec![(variant.to_string(), value.serialize(self)?)]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder {
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<SeqBuilder, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder {
            items: Vec::with_capacity(len),
            variant: Some(variant),
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapBuilder, Error> {
        Ok(MapBuilder {
            entries: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
            variant: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<MapBuilder, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapBuilder, Error> {
        Ok(MapBuilder {
            entries: Vec::with_capacity(len),
            key: None,
            variant: Some(variant),
        })
    }
}

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let v = value.serialize(NodeSerializer)?;
        if v != Node::Absent {
            self.items.push(v);
        }
        Ok(())
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleStruct for SeqBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleVariant for SeqBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error("a map value without its key".into()))?;
        let value = value.serialize(NodeSerializer)?;
        self.push(key, value);
        Ok(())
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeStruct for MapBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        let value = value.serialize(NodeSerializer)?;
        self.push(key.to_string(), value);
        Ok(())
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeStructVariant for MapBuilder {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<Node, Error> {
        Ok(self.finish())
    }
}

/// Map keys: strings only, as in YAML objects Kubernetes reads.
struct KeySerializer;

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<String, Error> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_bool(self, _: bool) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_i8(self, _: i8) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_i16(self, _: i16) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_i32(self, _: i32) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_i64(self, _: i64) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_u8(self, _: u8) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_u16(self, _: u16) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_u32(self, _: u32) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_u64(self, _: u64) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_f32(self, _: f32) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_f64(self, _: f64) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_none(self) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(not_a_string())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_string())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_string())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_string())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_string())
    }
}

fn not_a_string() -> Error {
    Error("a map key must be a string".into())
}
