//! Spin's application variables (`fermyon:spin/variables@2.0.0`), as the front reads them
//! with spin-sdk's `variables::get`: a fixed map set at start-up, as `spin up` resolves
//! `[variables]` from the manifest's defaults and `SPIN_VARIABLE_*`.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime::component::{HasData, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        inline: "
            package fermyon:spin@2.0.0;
            interface variables {
                get: func(name: string) -> result<string, error>;
                variant error { invalid-name(string), undefined(string), provider(string), other(string) }
            }
            world host { import variables; }
        ",
    });
}

use bindings::fermyon::spin::variables::{self as wit, Error};

/// The variable naming the hosts the front answers to (see `spin.toml`).
pub const ALLOWED_HOSTS: &str = "allowed_hosts";
/// The variable bounding the gate's sessions (`max-sessions`).
pub const MAX_SESSIONS: &str = "max_sessions";
/// The variable setting the lease of a call's writer on its stream (`lease-ms`).
pub const LEASE_MS: &str = "lease_ms";
/// The variable setting how long a stream may go without a connection (`max-detached-ms`).
pub const MAX_DETACHED_MS: &str = "max_detached_ms";
/// The variable bounding the messages of one 2025-03-26 batch.
pub const MAX_BATCH: &str = "max_batch";

/// The app's variables, shared by every instance.
#[derive(Clone, Debug, Default)]
pub struct Variables(Arc<BTreeMap<String, String>>);

impl Variables {
    pub fn new(values: impl IntoIterator<Item = (String, String)>) -> Self {
        Self(Arc::new(values.into_iter().collect()))
    }
}

impl wit::Host for Variables {
    fn get(&mut self, name: String) -> Result<String, Error> {
        self.0.get(&name).cloned().ok_or(Error::Undefined(name))
    }
}

struct VariablesData;

impl HasData for VariablesData {
    type Data<'a> = &'a mut Variables;
}

/// Adds `fermyon:spin/variables` to `linker`; `view` finds the variables in the store's data.
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> &mut Variables,
) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, VariablesData>(linker, view)
}
