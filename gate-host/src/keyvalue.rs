//! A host implementation of `wasi:keyvalue@0.2.0-draft2` (`store` and `atomics`) over one
//! shared store, so that every instance — one per request — sees the same data: a map in this
//! process ([`MemoryKv`], answering like one of Spin's backends), or Redis ([`RedisKv`]), which
//! many host processes share.
//!
//! One bucket label (`default`), as in a Spin app with `key_value_stores = ["default"]`.

use resume_gate::StoreError;
use resume_gate::kv::{Kv, MemoryKv};
use resume_gate_redis::RedisKv;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

pub mod bindings {
    wasmtime::component::bindgen!({
        world: "wasi:keyvalue/imports@0.2.0-draft2",
        path: "../wit",
        with: {
            "wasi:keyvalue/store.bucket": super::Bucket,
            "wasi:keyvalue/atomics.cas": super::Cas,
        },
    });
}

use bindings::wasi::keyvalue::{atomics, store};

/// The only bucket label this host knows, as in a Spin app with `key_value_stores = ["default"]`.
pub const BUCKET: &str = "default";

/// An open `default` bucket.
pub struct Bucket;

/// A compare-and-swap in progress: what the key held when it was created.
pub struct Cas {
    key: String,
    current: Option<Vec<u8>>,
    watched: SharedWatch,
}

/// The store every instance of a host shares.
#[derive(Clone)]
pub enum SharedKv {
    /// A map in this process (the default: no services to run).
    Memory(MemoryKv),
    /// A Redis or Valkey server, shared with other processes.
    Redis(RedisKv),
}

/// What `SharedKv::watch` read.
pub enum SharedWatch {
    Memory(resume_gate::kv::Watched),
    Redis(resume_gate_redis::Watched),
}

impl From<MemoryKv> for SharedKv {
    fn from(kv: MemoryKv) -> Self {
        Self::Memory(kv)
    }
}

impl From<RedisKv> for SharedKv {
    fn from(kv: RedisKv) -> Self {
        Self::Redis(kv)
    }
}

impl SharedKv {
    /// The in-process map, when that is the store (tests look into it).
    pub fn memory(&self) -> Option<&MemoryKv> {
        match self {
            Self::Memory(kv) => Some(kv),
            Self::Redis(_) => None,
        }
    }

    /// Every key (a listing: for tests and tools; the gate never lists).
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        match self {
            Self::Memory(kv) => Ok(kv.keys()),
            Self::Redis(kv) => kv.keys(),
        }
    }
}

impl Kv for SharedKv {
    type Handle = SharedWatch;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Self::Memory(kv) => kv.get(key),
            Self::Redis(kv) => kv.get(key),
        }
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        match self {
            Self::Memory(kv) => kv.set(key, value),
            Self::Redis(kv) => kv.set(key, value),
        }
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        match self {
            Self::Memory(kv) => kv.delete(key),
            Self::Redis(kv) => kv.delete(key),
        }
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        match self {
            Self::Memory(kv) => kv.increment(key, delta),
            Self::Redis(kv) => kv.increment(key, delta),
        }
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, SharedWatch), StoreError> {
        match self {
            Self::Memory(kv) => kv.watch(key).map(|(v, w)| (v, SharedWatch::Memory(w))),
            Self::Redis(kv) => kv.watch(key).map(|(v, w)| (v, SharedWatch::Redis(w))),
        }
    }

    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        match self {
            Self::Memory(kv) => kv.list_keys(cursor),
            Self::Redis(kv) => kv.list_keys(cursor),
        }
    }

    fn swap(&mut self, watched: SharedWatch, value: &[u8]) -> Result<bool, StoreError> {
        match (self, watched) {
            (Self::Memory(kv), SharedWatch::Memory(w)) => kv.swap(w, value),
            (Self::Redis(kv), SharedWatch::Redis(w)) => kv.swap(w, value),
            _ => Err(StoreError("a compare-and-swap of another store".into())),
        }
    }
}

/// What the key-value host functions see of a store's data.
pub struct KvView<'a> {
    pub kv: &'a mut SharedKv,
    pub table: &'a mut ResourceTable,
}

struct KvData;

impl HasData for KvData {
    type Data<'a> = KvView<'a>;
}

/// Adds `store` and `atomics` to `linker`; `view` finds them in the store's data.
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> KvView<'_>,
) -> wasmtime::Result<()> {
    store::add_to_linker::<T, KvData>(linker, view)?;
    atomics::add_to_linker::<T, KvData>(linker, view)
}

fn other(e: impl std::fmt::Display) -> store::Error {
    store::Error::Other(e.to_string())
}

impl store::Host for KvView<'_> {
    fn open(&mut self, identifier: String) -> Result<Resource<Bucket>, store::Error> {
        if identifier != BUCKET {
            return Err(store::Error::NoSuchStore);
        }
        self.table.push(Bucket).map_err(other)
    }
}

impl store::HostBucket for KvView<'_> {
    fn get(&mut self, _: Resource<Bucket>, key: String) -> Result<Option<Vec<u8>>, store::Error> {
        self.kv.get(&key).map_err(|e| other(e.0))
    }

    fn set(&mut self, _: Resource<Bucket>, key: String, value: Vec<u8>) -> Result<(), store::Error> {
        self.kv.set(&key, &value).map_err(|e| other(e.0))
    }

    fn delete(&mut self, _: Resource<Bucket>, key: String) -> Result<(), store::Error> {
        self.kv.delete(&key).map_err(|e| other(e.0))
    }

    fn exists(&mut self, _: Resource<Bucket>, key: String) -> Result<bool, store::Error> {
        self.kv.get(&key).map(|v| v.is_some()).map_err(|e| other(e.0))
    }

    fn list_keys(
        &mut self,
        _: Resource<Bucket>,
        cursor: Option<String>,
    ) -> Result<store::KeyResponse, store::Error> {
        let (keys, cursor) = self.kv.list_keys(cursor.as_deref()).map_err(|e| other(e.0))?;
        Ok(store::KeyResponse { keys, cursor })
    }

    fn drop(&mut self, bucket: Resource<Bucket>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}

impl atomics::Host for KvView<'_> {
    fn increment(&mut self, _: Resource<Bucket>, key: String, delta: i64) -> Result<i64, store::Error> {
        self.kv.increment(&key, delta).map_err(|e| other(e.0))
    }

    fn swap(&mut self, cas: Resource<Cas>, value: Vec<u8>) -> Result<(), atomics::CasError> {
        let taken = self.table.delete(cas).map_err(|e| atomics::CasError::StoreError(other(e)))?;
        match self.kv.swap(taken.watched, &value) {
            Ok(true) => Ok(()),
            Ok(false) => {
                // Hand back a compare-and-swap on what the key holds now, for a retry.
                let store_error = |e: store::Error| atomics::CasError::StoreError(e);
                let (current, watched) = self.kv.watch(&taken.key).map_err(|e| store_error(other(e.0)))?;
                let again = Cas { key: taken.key, current, watched };
                let handle = self.table.push(again).map_err(|e| store_error(other(e)))?;
                Err(atomics::CasError::CasFailed(handle))
            }
            Err(e) => Err(atomics::CasError::StoreError(other(e.0))),
        }
    }
}

impl atomics::HostCas for KvView<'_> {
    fn new(&mut self, _: Resource<Bucket>, key: String) -> Result<Resource<Cas>, store::Error> {
        let (current, watched) = self.kv.watch(&key).map_err(|e| other(e.0))?;
        self.table.push(Cas { key, current, watched }).map_err(other)
    }

    fn current(&mut self, cas: Resource<Cas>) -> Result<Option<Vec<u8>>, store::Error> {
        Ok(self.table.get(&cas).map_err(other)?.current.clone())
    }

    fn drop(&mut self, cas: Resource<Cas>) -> wasmtime::Result<()> {
        self.table.delete(cas)?;
        Ok(())
    }
}
