//! Columns of scene values: one component's values for many entities.
//!
//! Saving writes each component of a group of entities straight from the
//! world's column into one postcard byte string; loading decodes such a
//! string (or a group of text values) into a typed `Vec`, which the world
//! writes into the entities' final archetype in one pass.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{SceneError, Where};
use super::registry::{Kind, MapFn, TypeRegistry};
use super::value::{DecodeError, DynamicSeed, SceneValue, SerDynamic, take_postcard};
use mosaic::ArchetypeId;
use mosaic::BatchColumn;
use mosaic::ComponentSchema;
use mosaic::Entity;
use mosaic::EntityMapper;
use mosaic::World;
use mosaic::{Component, StorageType};

/// A postcard output that appends to a borrowed `Vec`.
struct VecSink<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for VecSink<'_> {
    type Output = ();

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        // Numbers come as 4 or 8 bytes: a copy of known length compiles to
        // a store, where a slice of unknown length calls `memcpy`.
        match *bytes {
            [a, b, c, d] => self.0.extend_from_slice(&[a, b, c, d]),
            [a, b, c, d, e, f, g, h] => self.0.extend_from_slice(&[a, b, c, d, e, f, g, h]),
            _ => self.0.extend_from_slice(bytes),
        }
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends the postcard bytes of `value` to `out`.
#[inline]
pub(crate) fn write_postcard<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    postcard::serialize_with_flavor(value, VecSink(out)).map_err(|e| e.to_string())
}

/// Decodes one value from the front of postcard bytes (advancing them) and
/// hands it to a serializer.
pub(crate) type WriteFn =
    fn(&mut &[u8], &mut dyn FnMut(&dyn erased_serde::Serialize)) -> Result<(), String>;

/// Appends the postcard bytes of one component of some entities of one
/// archetype (see [`encode_rows`]).
pub(crate) type EncodeRowsFn =
    fn(&World, ArchetypeId, Option<&[usize]>, &[Entity], &mut Vec<u8>) -> Result<(), String>;

/// One component's values, decoded for a batch of new entities.
pub(crate) trait PendingColumn: Send {
    /// Decodes one value (of a text scene, or a binary prefab) and appends it.
    fn push_value(&mut self, value: &SceneValue) -> Result<(), DecodeError>;

    /// Decodes one value from a type-erased deserializer (the walk over a
    /// text scene, see `doc`) and appends it.
    fn push_erased(
        &mut self,
        de: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), erased_serde::Error>;

    /// Decodes one value from the front of `bytes` and appends it; returns
    /// the bytes after it.
    fn push_postcard<'b>(&mut self, bytes: &'b [u8]) -> Result<&'b [u8], DecodeError>;

    /// Decodes `n` values from the front of `bytes` and appends them;
    /// returns the bytes after them. On an error, some values may have been
    /// appended ([`PendingColumn::truncate`] them).
    fn push_rows<'b>(&mut self, bytes: &'b [u8], n: usize) -> Result<&'b [u8], DecodeError>;

    /// Number of values.
    fn len(&self) -> usize;

    /// Keeps the first `len` values.
    fn truncate(&mut self, len: usize);

    /// Maps the entity references of the last value appended (nothing if
    /// the type was registered without `map_entities`).
    fn map_last(&mut self, mapper: &mut dyn EntityMapper);

    /// Maps the entity references of every value.
    fn map_all(&mut self, mapper: &mut dyn EntityMapper);

    /// The values, for [`World::spawn_column_batches`].
    fn into_batch(self: Box<Self>) -> BatchColumn;
}

struct ColumnOf<T> {
    values: Vec<T>,
    map: Option<MapFn<T>>,
}

impl<T: Component + DeserializeOwned> PendingColumn for ColumnOf<T> {
    fn push_value(&mut self, value: &SceneValue) -> Result<(), DecodeError> {
        self.values.push(value.decode(PhantomData::<T>)?);
        Ok(())
    }

    #[inline]
    fn push_erased(
        &mut self,
        de: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), erased_serde::Error> {
        self.values.push(erased_serde::deserialize(de)?);
        Ok(())
    }

    #[inline]
    fn push_postcard<'b>(&mut self, bytes: &'b [u8]) -> Result<&'b [u8], DecodeError> {
        let (value, rest) = take_postcard(bytes, PhantomData::<T>)?;
        self.values.push(value);
        Ok(rest)
    }

    fn push_rows<'b>(&mut self, bytes: &'b [u8], n: usize) -> Result<&'b [u8], DecodeError> {
        let fail = |e: postcard::Error| DecodeError {
            message: super::depth::message(&e),
            path: String::new(),
            at: Where::Unknown,
        };
        self.values.reserve(n);
        let mut de = super::depth::deserializer(bytes);
        for _ in 0..n {
            self.values.push(T::deserialize(&mut de).map_err(fail)?);
        }
        de.finalize().map_err(fail)
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
    }

    fn map_last(&mut self, mapper: &mut dyn EntityMapper) {
        if let (Some(map), Some(last)) = (self.map, self.values.last_mut()) {
            map(last, mapper);
        }
    }

    fn map_all(&mut self, mapper: &mut dyn EntityMapper) {
        if let Some(map) = self.map {
            for value in &mut self.values {
                map(value, mapper);
            }
        }
    }

    fn into_batch(self: Box<Self>) -> BatchColumn {
        BatchColumn::new(self.values)
    }
}

/// An empty column of `T`s, remapped with `map` if given.
pub(crate) fn new_column<T: Component + DeserializeOwned>(
    map: Option<MapFn<T>>,
) -> Box<dyn PendingColumn> {
    Box::new(ColumnOf::<T> {
        values: Vec::new(),
        map,
    })
}

/// Appends the postcard bytes of component `T` of each of `entities`
/// (which sit at `rows` of `archetype`'s table, or are the whole table in
/// row order if `rows` is `None`) to `out`, in order.
pub(crate) fn encode_rows<T: Component + Serialize>(
    world: &World,
    archetype: ArchetypeId,
    rows: Option<&[usize]>,
    entities: &[Entity],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let fail = |e: postcard::Error| e.to_string();
    // A guess (postcard is rarely larger than the value in memory) that
    // saves regrowing the buffer for plain-data components.
    out.reserve(entities.len() * std::mem::size_of::<T>());
    let mut serializer = postcard::Serializer {
        output: VecSink(out),
    };
    if T::STORAGE == StorageType::Table {
        if let Some(values) = world.get_archetype(archetype).and_then(|a| a.column::<T>()) {
            match rows {
                Some(rows) => {
                    for &row in rows {
                        values[row].serialize(&mut serializer).map_err(fail)?;
                    }
                }
                None => {
                    for value in values {
                        value.serialize(&mut serializer).map_err(fail)?;
                    }
                }
            }
            return Ok(());
        }
    }
    for &entity in entities {
        let value = world.get::<T>(entity).map_err(|e| e.to_string())?;
        value.serialize(&mut serializer).map_err(fail)?;
    }
    Ok(())
}

/// Decodes one `T` from the front of `bytes` (postcard) and hands it to
/// `write` as a serialisable value; advances `bytes` past it.
pub(crate) fn write_value<T: Serialize + DeserializeOwned>(
    bytes: &mut &[u8],
    write: &mut dyn FnMut(&dyn erased_serde::Serialize),
) -> Result<(), String> {
    let (value, rest) = take_postcard(bytes, PhantomData::<T>).map_err(|e| e.message)?;
    *bytes = rest;
    write(&value);
    Ok(())
}

/// The error for bytes left over after a column's values.
pub(crate) fn left_over(component: &str, bytes: usize) -> SceneError {
    SceneError::WrongShape {
        component: component.to_owned(),
        path: String::new(),
        message: format!("{bytes} bytes left over after the values"),
        at: Where::Unknown,
    }
}

/// How one column's values are read from postcard bytes to be written in
/// another format: with their registered type, or a runtime-defined
/// component's schema.
#[derive(Clone, Copy)]
pub(crate) enum Codec<'a> {
    Typed(WriteFn),
    Dynamic(&'a ComponentSchema),
}

impl<'a> Codec<'a> {
    /// The codec of component `name`: a registered type (if a registry is
    /// given), else one of `schemas`.
    pub fn find(
        name: &str,
        registry: Option<&'a TypeRegistry>,
        schemas: impl IntoIterator<Item = &'a ComponentSchema>,
    ) -> Option<Codec<'a>> {
        if let Some(fns) = registry
            .and_then(|r| r.get(name, Kind::Component))
            .and_then(|e| e.column)
        {
            return Some(Codec::Typed(fns.write));
        }
        schemas
            .into_iter()
            .find(|s| s.name() == name)
            .map(Codec::Dynamic)
    }

    /// Decodes the value at the front of `bytes`, hands it to `write` and
    /// advances `bytes` past it.
    pub fn write(
        &self,
        bytes: &mut &[u8],
        write: &mut dyn FnMut(&dyn erased_serde::Serialize),
    ) -> Result<(), String> {
        match self {
            Codec::Typed(f) => f(bytes, write),
            Codec::Dynamic(schema) => {
                let (value, rest) =
                    take_postcard(bytes, DynamicSeed(schema)).map_err(|e| e.message)?;
                *bytes = rest;
                write(&SerDynamic(&value));
                Ok(())
            }
        }
    }
}
