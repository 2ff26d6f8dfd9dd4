//! The component behaves exactly like the core: the same random operation sequences, played on
//! the native core and on the built component in real wasmtime, give the same decisions,
//! reasons, errors and replayed payloads, step by step.

use proptest::prelude::*;
use resume_gate::Config;
use tests::drivers::{InProcess, Wasm};
use tests::ops::{Normalizer, Op, Run, ops, small_config, tight_budget_config};

const CASES: u32 = 256;

fn same_on_both_sides(ops: &[Op], config: Config) -> Result<(), TestCaseError> {
    let mut native = Run::new(InProcess::with_config(config.clone()).expect("valid config"), &config);
    let mut wasm = Run::new(Wasm::new().expect("instantiate the component"), &config);
    let (mut norm_native, mut norm_wasm) = (Normalizer::default(), Normalizer::default());
    for (i, op) in ops.iter().enumerate() {
        let (_, expected) = native.step(op);
        // A trap panics here: proptest reports it with the shortest sequence that traps.
        let (_, actual) = wasm.step(op);
        let (expected, actual) = (norm_native.outcome(&expected), norm_wasm.outcome(&actual));
        prop_assert_eq!(expected, actual, "step {}: {:?}", i, op);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn the_component_decides_exactly_like_the_core(ops in ops(60)) {
        same_on_both_sides(&ops, small_config(false))?;
    }

    #[test]
    fn the_component_decides_exactly_like_the_core_under_a_tight_memory_budget(ops in ops(60)) {
        same_on_both_sides(&ops, tight_budget_config(false))?;
    }

    #[test]
    fn the_component_decides_exactly_like_the_core_with_signed_ids(ops in ops(60)) {
        same_on_both_sides(&ops, small_config(true))?;
    }
}
