//! Gate operation sequences decoded from the input, played on the native core and checked
//! step by step against the property tests' reference model (`model::model`):
//! every promise of the decision table, every bound. The first byte picks the configuration:
//! small bounds, signed ids, or a memory budget tighter than the other bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::driver::InProcess;
use model::model::Model;
use model::ops::{Run, ops_from_bytes, small_config, tight_budget_config};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let config = match pick % 3 {
        0 => small_config(false),
        1 => small_config(true),
        _ => tight_budget_config(false),
    };
    let tight = pick % 3 == 2;
    let mut run = Run::new(InProcess::with_config(config.clone()).expect("valid config"), &config);
    let mut model = Model::new(config.clone(), run.now);
    for op in ops_from_bytes(rest) {
        let (call, outcome) = run.step(&op);
        let store = run.driver.gate.store();
        if tight {
            let st = store.stats();
            assert!(st.held <= config.max_total_bytes, "{call:?} left {} bytes held", st.held);
            let most = st.most_held_by_a_session;
            assert!(most <= config.max_bytes_per_session, "{call:?} left {most} bytes in a session");
        } else if let Err(e) = model.check(&call, &outcome, store) {
            panic!("{call:?} answered {outcome:?}: {e}");
        }
    }
});
