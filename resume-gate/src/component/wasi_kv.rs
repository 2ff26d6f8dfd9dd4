//! [`Kv`] over the host's `wasi:keyvalue@0.2.0-draft2` (`store` and `atomics` only): one host
//! call per operation, so the round trips the core counts are the host's.

use super::wasi::keyvalue::{atomics, store};
use crate::error::StoreError;
use crate::kv::Kv;

/// The bucket every instance of the gate opens; a Spin app lists it in `key_value_stores`.
pub const BUCKET: &str = "default";

pub struct WasiKv {
    bucket: store::Bucket,
}

impl WasiKv {
    pub fn open() -> Result<Self, StoreError> {
        Ok(Self { bucket: store::open(BUCKET).map_err(failed)? })
    }
}

fn failed(e: store::Error) -> StoreError {
    StoreError(match e {
        store::Error::NoSuchStore => format!("no key-value store `{BUCKET}`"),
        store::Error::AccessDenied => format!("access to key-value store `{BUCKET}` denied"),
        store::Error::Other(why) => why,
    })
}

impl Kv for WasiKv {
    type Handle = atomics::Cas;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.bucket.get(key).map_err(failed)
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.bucket.set(key, value).map_err(failed)
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.bucket.delete(key).map_err(failed)
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        atomics::increment(&self.bucket, key, delta).map_err(failed)
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, atomics::Cas), StoreError> {
        let cas = atomics::Cas::new(&self.bucket, key).map_err(failed)?;
        let current = cas.current().map_err(failed)?;
        Ok((current, cas))
    }

    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        let page = self.bucket.list_keys(cursor).map_err(failed)?;
        Ok((page.keys, page.cursor))
    }

    fn swap(&mut self, cas: atomics::Cas, value: &[u8]) -> Result<bool, StoreError> {
        match atomics::swap(cas, value) {
            Ok(()) => Ok(true),
            Err(atomics::CasError::CasFailed(_)) => Ok(false),
            Err(atomics::CasError::StoreError(e)) => Err(failed(e)),
        }
    }
}
