//! The event-id parser takes any bytes: it never panics, and whatever it accepts is canonical
//! (formatting the parsed id gives back exactly the input), so one id has one spelling.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resume_gate::event_id::EventId;

fuzz_target!(|data: &[u8]| {
    if let Some(id) = EventId::parse(data) {
        assert_eq!(id.format().as_bytes(), data, "an accepted id is canonical");
    }
});
