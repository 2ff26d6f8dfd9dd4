//! The decision table of DESIGN.md as executable sentences, one group per row, in its order,
//! then the seed's three observed failures, the state transitions and the bounds.

use resume_gate::event_id::{EventId, session_tag};
use resume_gate::{
    Config, Decision, Event, FreshStart, Gate, GateError, Opened, Origin, RequestId, Resumption, StaleReason,
    StreamNo,
};

const T0: u64 = 1_700_000_000_000;
const S: &str = "session-a";

struct Fixture {
    gate: Gate,
    now: u64,
    entropy: u64,
}

impl Fixture {
    fn new() -> Self {
        Self::with(Config::default())
    }

    fn with(config: Config) -> Self {
        let mut f = Fixture { gate: Gate::in_memory(config).unwrap(), now: T0, entropy: 7 };
        f.open_session(S);
        f
    }

    fn open_session(&mut self, session: &str) -> u64 {
        self.entropy += 1;
        self.gate.open_session(session, self.now, self.entropy.to_le_bytes()).unwrap().epoch
    }

    fn post(&mut self, id: i64) -> Opened {
        self.gate.open_stream(S, Origin::Request(RequestId::Number(id)), self.now).unwrap()
    }

    fn emit(&mut self, stream: StreamNo, data: &str) -> Event {
        self.gate.emit(S, stream, data.into(), self.now).unwrap().into_event(stream, data.into(), false)
    }

    fn terminal(&mut self, stream: StreamNo, data: &str) -> Event {
        self.gate.terminal(S, stream, data.into(), self.now).unwrap().into_event(stream, data.into(), true)
    }

    fn get(&mut self, cursor: &str) -> Decision {
        self.get_bytes(cursor.as_bytes())
    }

    fn get_bytes(&mut self, cursor: &[u8]) -> Decision {
        self.gate.reconnect(S, cursor, Origin::Standalone, self.now).unwrap()
    }

    /// A stream with `n` events emitted and its connection dropped.
    fn dropped_stream(&mut self, request: i64, n: usize) -> (Opened, Vec<Event>) {
        let opened = self.post(request);
        let events = (0..n).map(|i| self.emit(opened.stream, &format!("event {i}"))).collect();
        self.gate.detach(S, opened.stream, opened.attachment, self.now).unwrap();
        (opened, events)
    }

    /// An id with the session's real epoch and tag but arbitrary stream and sequence numbers.
    fn crafted(&self, epoch: u64, stream: StreamNo, seq: u64) -> String {
        EventId::mint(epoch, session_tag(S), stream, seq, None).format()
    }
}

fn resumed(d: Decision) -> Resumption {
    match d {
        Decision::Resume(r) => r,
        Decision::Fresh(f) => panic!("expected a resume, got fresh: {:?}", f.reason),
    }
}

fn fresh(d: Decision) -> FreshStart {
    match d {
        Decision::Fresh(f) => f,
        Decision::Resume(r) => panic!("expected fresh, got a resume of {} events", r.events.len()),
    }
}

fn fresh_because(d: Decision, reason: StaleReason) -> FreshStart {
    let f = fresh(d);
    assert_eq!(f.reason, reason);
    assert_eq!(f.opened.priming.seq, 0, "a fresh stream starts with its priming event");
    assert!(f.opened.priming.data.is_empty());
    f
}

fn data(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

mod row_1_the_id_parses {
    use super::*;

    #[test]
    fn a_cursor_that_does_not_parse_starts_a_fresh_stream_as_malformed() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        let genuine = opened.priming.id.clone();
        let cursors: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"0".to_vec(),
            b"e1-s1-3".to_vec(),
            vec![0xff, 0xfe, 0x00, b'\n'],
            vec![b'a'; 100_000],
            genuine.replace(".1.0", ".01.0").into_bytes(),
            format!("{genuine} ").into_bytes(),
            genuine.to_uppercase().into_bytes(),
        ];
        for cursor in cursors {
            let d = f.get_bytes(&cursor);
            assert!(fresh(d).reason == StaleReason::Malformed, "{:?}", String::from_utf8_lossy(&cursor));
        }
    }
}

mod row_2_the_mac_verifies {
    use super::*;

    fn signed() -> Fixture {
        Fixture::with(Config {
            signing_key: Some(b"a signing key of 32 bytes, okay!".to_vec()),
            ..Config::default()
        })
    }

    #[test]
    fn with_a_signing_key_a_genuine_id_resumes() {
        let mut f = signed();
        let (_, events) = f.dropped_stream(1, 3);
        let r = resumed(f.get(&events[0].id));
        assert_eq!(data(&r.events), ["event 1", "event 2"]);
    }

    #[test]
    fn with_a_signing_key_an_altered_or_unsigned_id_is_forged() {
        let mut f = signed();
        let (opened, events) = f.dropped_stream(1, 3);
        let epoch = EventId::parse(opened.priming.id.as_bytes()).unwrap().epoch;
        let genuine = &events[0].id;
        let (fields, mac) = genuine.rsplit_once('.').unwrap();
        let flipped =
            if mac.starts_with('0') { mac.replacen('0', "1", 1) } else { format!("0{}", &mac[1..]) };
        let cursors = [
            format!("{fields}.{flipped}"),
            fields.to_owned(),
            genuine.replace(".1.1.", ".1.2."),
            f.crafted(epoch, opened.stream, 0),
        ];
        for cursor in cursors {
            fresh_because(f.get(&cursor), StaleReason::Forged);
        }
    }
}

mod row_3_minted_for_this_session {
    use super::*;

    #[test]
    fn a_cursor_minted_for_another_session_never_replays_across_sessions() {
        let mut f = Fixture::new();
        f.open_session("session-b");
        let theirs = f.gate.open_stream("session-b", Origin::Request(RequestId::Number(1)), f.now).unwrap();
        let their_event = f.gate.emit("session-b", theirs.stream, "secret".into(), f.now).unwrap();
        let their_event = their_event.into_event(theirs.stream, "secret".into(), false);
        f.gate.detach("session-b", theirs.stream, theirs.attachment, f.now).unwrap();

        let d = f.get(&theirs.priming.id);
        let fr = fresh_because(d, StaleReason::OtherSession);
        assert_eq!(fr.stranded, Vec::<RequestId>::new(), "nothing of another session is named either");

        let owner =
            f.gate.reconnect("session-b", theirs.priming.id.as_bytes(), Origin::Standalone, f.now).unwrap();
        assert_eq!(resumed(owner).events, vec![their_event], "the owner is not disturbed");
    }
}

mod row_4_the_current_epoch {
    use super::*;

    #[test]
    fn a_cursor_from_before_a_session_reissue_is_epoch_changed() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        f.open_session(S);
        fresh_because(f.get(&opened.priming.id), StaleReason::EpochChanged);
    }

    #[test]
    fn a_cursor_from_before_a_restart_with_memory_state_is_epoch_changed() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        let mut restarted =
            Fixture { gate: Gate::in_memory(Config::default()).unwrap(), now: f.now, entropy: 1000 };
        restarted.open_session(S);
        fresh_because(restarted.get(&opened.priming.id), StaleReason::EpochChanged);
    }
}

mod row_5_the_stream_exists {
    use super::*;

    #[test]
    fn a_cursor_naming_a_stream_this_session_never_opened_is_unknown() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        let epoch = EventId::parse(opened.priming.id.as_bytes()).unwrap().epoch;
        fresh_because(f.get(&f.crafted(epoch, 99, 0)), StaleReason::Unknown);
    }
}

mod row_6_only_a_get_resumes {
    use super::*;

    #[test]
    fn a_post_with_a_valid_cursor_never_resumes_and_gets_a_stream_for_its_own_request() {
        let mut f = Fixture::new();
        let (_, events) = f.dropped_stream(1, 2);
        let own = Origin::Request(RequestId::Text("call-2".into()));
        let d = f.gate.reconnect(S, events[0].id.as_bytes(), own.clone(), f.now).unwrap();
        let fr = fresh_because(d, StaleReason::PostNeverResumes);
        let stream = fr.opened.stream;
        assert!(f.gate.terminal(S, stream, "result 2".into(), f.now).is_ok(), "it is a request stream");
        let r = resumed(f.get(&events[0].id));
        assert_eq!(data(&r.events), ["event 1"], "the original stream was left resumable");
    }

    #[test]
    fn a_post_re_sending_the_cursors_own_request_id_is_refused_not_run_twice() {
        let mut f = Fixture::new();
        let (_, events) = f.dropped_stream(1, 1);
        let again = Origin::Request(RequestId::Number(1));
        let r = f.gate.reconnect(S, events[0].id.as_bytes(), again, f.now);
        assert_eq!(r, Err(GateError::DuplicateRequestId));
    }
}

mod row_7_the_stream_is_live {
    use super::*;

    #[test]
    fn a_cursor_into_a_completed_stream_is_completed() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 1);
        let result = f.terminal(opened.stream, "result");
        fresh_because(f.get(&result.id), StaleReason::Completed);
        let fr = fresh_because(f.get(&events[0].id), StaleReason::Completed);
        assert_eq!(fr.stranded, Vec::<RequestId>::new(), "the client acknowledged the result");
    }

    #[test]
    fn a_cursor_into_a_cancelled_stream_is_aborted_and_answers_nothing() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(5, 2);
        f.gate.abort(S, opened.stream).unwrap();
        let fr = fresh_because(f.get(&events[0].id), StaleReason::Aborted);
        assert_eq!(
            fr.stranded,
            Vec::<RequestId>::new(),
            "MCP: a cancelled request gets no response, not even an error"
        );
        let (_, events) = f.dropped_stream(6, 2);
        assert!(f.gate.abort_request(S, &RequestId::Number(6)).unwrap());
        let fr = fresh_because(f.get(&events[1].id), StaleReason::Aborted);
        assert_eq!(fr.stranded, Vec::<RequestId>::new());
        assert!(!f.gate.abort_request(S, &RequestId::Number(6)).unwrap(), "already cancelled");
    }

    #[test]
    fn a_stream_kept_without_a_connection_past_retention_is_aborted() {
        let config =
            Config { max_detached_ms: Some(2 * Config::default().retention_ms), ..Config::default() };
        let mut f = Fixture::with(config.clone());
        let (_, events) = f.dropped_stream(1, 2);
        f.now += config.retention_ms;
        assert!(matches!(f.get(&events[0].id), Decision::Resume(_)), "still within retention");
        let (_, events) = f.dropped_stream(2, 2);
        f.now += config.retention_ms + 1;
        let fr = fresh_because(f.get(&events[0].id), StaleReason::Aborted);
        assert_eq!(fr.stranded, [RequestId::Number(2)]);
        assert_eq!(f.gate.counters().unwrap().expired_streams, 0, "expired by the decision itself");
    }

    #[test]
    fn a_call_nobody_was_attached_to_past_max_detached_is_aborted_and_its_request_stranded() {
        let config = Config::default();
        let mut f = Fixture::with(config.clone());
        let (_, events) = f.dropped_stream(1, 2);
        f.now += config.max_detached();
        assert!(matches!(f.get(&events[0].id), Decision::Resume(_)), "still within max-detached");
        let (opened, events) = f.dropped_stream(2, 2);
        f.now += config.max_detached() + 1;
        let fr = fresh_because(f.get(&events[0].id), StaleReason::Aborted);
        assert_eq!(fr.stranded, [RequestId::Number(2)], "the client gets -32001, never a wait");
        let late = f.gate.emit(S, opened.stream, "the tool goes on".into(), f.now);
        assert_eq!(late, Err(GateError::StreamFinished), "the call was given up: it stops");
    }

    #[test]
    fn an_open_stream_never_expires_while_its_connection_is_attached() {
        let mut f = Fixture::new();
        let opened = f.post(1);
        let first = f.emit(opened.stream, "progress");
        f.now += 10 * f.gate.config().retention_ms;
        let second = f.emit(opened.stream, "later progress");
        assert_eq!(resumed(f.get(&first.id)).events, vec![second]);
    }

    #[test]
    fn a_cursor_into_a_superseded_standalone_stream_is_superseded() {
        let mut f = Fixture::new();
        let old = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        f.gate.emit(S, old.stream, "server request".into(), f.now).unwrap();
        let new = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        let fr = fresh_because(f.get(&old.priming.id), StaleReason::Superseded);
        assert_eq!(
            fr.stranded,
            Vec::<RequestId>::new(),
            "a standalone stream carries no request of the client"
        );
        assert_ne!(new.stream, old.stream);
        assert_eq!(f.gate.emit(S, old.stream, "late".into(), f.now), Err(GateError::StreamFinished));
    }
}

mod row_8_the_sequence_number_was_issued {
    use super::*;

    #[test]
    fn a_sequence_number_never_issued_on_the_stream_is_unknown() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        let epoch = EventId::parse(opened.priming.id.as_bytes()).unwrap().epoch;
        fresh_because(f.get(&f.crafted(epoch, opened.stream, 3)), StaleReason::Unknown);
        fresh_because(f.get(&f.crafted(epoch, opened.stream, u64::MAX)), StaleReason::Unknown);
        assert_eq!(resumed(f.get(&f.crafted(epoch, opened.stream, 2))).events, vec![], "seq 2 was issued");
    }

    /// A cursor past the stream's last event, on a call whose writer is gone and that has no
    /// result, was handed out and then lost: the store went back in time. The request can no
    /// longer be answered there, so it is named stranded (the host answers it `-32001`); while
    /// the writer holds its lease, the same cursor names nothing. The stream is left as it is.
    #[test]
    fn a_cursor_past_what_the_store_kept_strands_a_call_whose_writer_is_gone() {
        let mut f = Fixture::new();
        // Still attached: only its writer's lease can pass, not `max-detached`.
        let opened = f.post(7);
        (0..2).for_each(|i| drop(f.emit(opened.stream, &format!("event {i}"))));
        let epoch = EventId::parse(opened.priming.id.as_bytes()).unwrap().epoch;
        let fr = fresh_because(f.get(&f.crafted(epoch, opened.stream, 5)), StaleReason::Unknown);
        assert_eq!(fr.stranded, Vec::<RequestId>::new(), "its writer holds the lease");
        f.now += f.gate.config().lease_ms + 1;
        let fr = fresh_because(f.get(&f.crafted(epoch, opened.stream, 5)), StaleReason::Unknown);
        assert_eq!(fr.stranded, [RequestId::Number(7)]);
    }
}

mod row_9_not_the_terminal_itself {
    use super::*;

    #[test]
    fn a_cursor_at_the_terminal_event_starts_a_fresh_stream_and_completes_the_stream() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 1);
        let result = f.terminal(opened.stream, "result");
        let fr = fresh_because(f.get(&result.id), StaleReason::Completed);
        assert_eq!(fr.stranded, Vec::<RequestId>::new());
        // Completed now: even an earlier cursor no longer replays the result.
        fresh_because(f.get(&events[0].id), StaleReason::Completed);
    }
}

mod row_10_every_missed_event_is_buffered {
    use super::*;

    #[test]
    fn a_cursor_whose_successors_were_evicted_is_evicted_never_a_partial_replay() {
        let mut f = Fixture::with(Config { max_events_per_stream: 3, ..Config::default() });
        let (opened, events) = f.dropped_stream(9, 5);
        // Buffered: events 3..=5. A cursor at event 2 needs 3.. and resumes; at 1 it needs 2.
        assert_eq!(data(&resumed(f.get(&events[1].id)).events), ["event 2", "event 3", "event 4"]);
        let fr = fresh_because(f.get(&events[0].id), StaleReason::Evicted);
        assert_eq!(fr.stranded, [RequestId::Number(9)], "the client never gets its result");
        assert_eq!(
            f.gate.emit(S, opened.stream, "x".into(), f.now),
            Err(GateError::StreamFinished),
            "the gate ended it"
        );
        fresh_because(f.get(&events[4].id), StaleReason::Aborted);
    }

    #[test]
    fn the_byte_bound_evicts_too_and_an_oversized_event_is_sent_but_never_replayed() {
        let mut f = Fixture::with(Config { max_bytes_per_stream: 200, ..Config::default() });
        let opened = f.post(1);
        let small = f.emit(opened.stream, "small");
        let huge = f.emit(opened.stream, &"x".repeat(500));
        assert_eq!(huge.data.len(), 500, "the live connection still gets it");
        fresh_because(f.get(&small.id), StaleReason::Evicted);
    }
}

mod row_11_the_writer_holds_its_lease {
    use super::*;

    const LEASE: u64 = Config::DEFAULT_LEASE_MS;

    #[test]
    fn a_call_whose_writer_let_its_lease_pass_replays_what_was_stored_then_is_stranded() {
        let mut f = Fixture::new();
        let opened = f.post(4);
        let events: Vec<Event> = (0..3).map(|i| f.emit(opened.stream, &format!("event {i}"))).collect();
        f.now += LEASE + 1;
        let r = resumed(f.get(&events[0].id));
        assert_eq!(r.events, events[1..], "what the writer stored, exactly once");
        assert_eq!(r.stranded, [RequestId::Number(4)], "then the request's error, not a wait");
        assert!(!r.includes_terminal);
        let late = f.gate.emit(S, opened.stream, "the writer wakes up".into(), f.now);
        assert_eq!(late, Err(GateError::StreamFinished), "the stream ended with the verdict");
        assert_eq!(f.gate.renew_lease(S, opened.stream, f.now), Err(GateError::StreamFinished));
        fresh_because(f.get(&events[2].id), StaleReason::Aborted);
    }

    #[test]
    fn a_poll_names_the_stranded_request_once_the_lease_passed_and_changes_nothing() {
        // Its client comes back within max-detached; its writer is gone.
        let mut f = Fixture::with(Config { max_detached_ms: Some(10 * LEASE), ..Config::default() });
        let (opened, events) = f.dropped_stream(5, 2);
        let fresh = f.gate.poll(S, opened.stream, opened.attachment, 0, f.now).unwrap();
        assert_eq!((fresh.events.len(), fresh.done, fresh.stranded), (2, false, Vec::<RequestId>::new()));
        f.now += LEASE + 1;
        let lost = f.gate.poll(S, opened.stream, opened.attachment, 1, f.now).unwrap();
        assert_eq!(lost.events, events[1..]);
        assert!(lost.done);
        assert_eq!(lost.stranded, [RequestId::Number(5)]);
        assert_eq!(resumed(f.get(&events[1].id)).stranded, [RequestId::Number(5)]);
    }

    #[test]
    fn events_and_heartbeats_renew_the_lease() {
        let mut f = Fixture::new();
        let opened = f.post(6);
        f.now += LEASE - 1;
        let event = f.emit(opened.stream, "progress");
        f.now += LEASE - 1;
        f.gate.renew_lease(S, opened.stream, f.now).unwrap();
        f.now += LEASE - 1;
        let r = resumed(f.get(&opened.priming.id));
        assert_eq!(
            (r.events, r.stranded),
            (vec![event], Vec::<RequestId>::new()),
            "a running call is resumed"
        );
        assert_eq!(f.gate.renew_lease(S, 999, f.now), Err(GateError::UnknownStream));
    }

    #[test]
    fn standalone_streams_and_answered_calls_hold_no_lease() {
        let mut f = Fixture::new();
        let standalone = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        let answered = f.post(7);
        let result = f.terminal(answered.stream, "result");
        f.now += LEASE + 1;
        assert_eq!(resumed(f.get(&standalone.priming.id)).stranded, Vec::<RequestId>::new());
        let r = resumed(f.get(&answered.priming.id));
        assert_eq!(
            (r.events, r.stranded),
            (vec![result], Vec::<RequestId>::new()),
            "the result, never an error"
        );
    }
}

mod all_checks_hold {
    use super::*;

    #[test]
    fn a_cursor_mid_stream_resumes_with_exactly_the_missed_events_in_order() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 4);
        let r = resumed(f.get(&events[1].id));
        assert_eq!(r.stream, opened.stream);
        assert_eq!(r.events, events[2..].to_vec());
        assert!(!r.includes_terminal);
    }

    #[test]
    fn the_priming_event_as_cursor_replays_every_event() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 3);
        assert_eq!(resumed(f.get(&opened.priming.id)).events, events);
    }

    #[test]
    fn a_client_that_missed_the_terminal_gets_it_once_more_then_the_stream_completes() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 2);
        let result = f.terminal(opened.stream, "result");
        let r = resumed(f.get(&events[1].id));
        assert_eq!(r.events, vec![Event { terminal: true, ..result.clone() }]);
        assert!(r.includes_terminal);
        // It got the result: its next cursor is the terminal, and nothing is replayed again.
        fresh_because(f.get(&result.id), StaleReason::Completed);
    }

    #[test]
    fn a_resume_takes_over_the_stream_and_a_detach_of_the_old_connection_is_ignored() {
        let mut f = Fixture::new();
        let opened = f.post(1);
        let e1 = f.emit(opened.stream, "one");
        let r = resumed(f.get(&e1.id));
        assert_ne!(r.attachment, opened.attachment);
        f.gate.detach(S, opened.stream, opened.attachment, f.now).unwrap();
        f.now += 10 * f.gate.config().retention_ms;
        let e2 = f.emit(opened.stream, "two");
        assert_eq!(resumed(f.get(&e1.id)).events, vec![e2], "still open: the stale detach did nothing");
    }

    #[test]
    fn a_resume_with_nothing_missed_returns_no_events_and_the_stream_continues() {
        let mut f = Fixture::new();
        let (_, events) = f.dropped_stream(1, 2);
        let r = resumed(f.get(&events[1].id));
        assert!(r.events.is_empty());
        assert_eq!(f.emit(r.stream, "next").seq, 3);
    }
}

mod table_order {
    use super::*;

    #[test]
    fn the_first_failing_check_decides() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 1);
        let result = f.terminal(opened.stream, "result");
        let post = |n| Origin::Request(RequestId::Number(n));
        // A POST with garbage: 1 before 6.
        let d = f.gate.reconnect(S, b"garbage", post(10), f.now).unwrap();
        assert_eq!(fresh(d).reason, StaleReason::Malformed);
        // A POST with the terminal id: 6 before 9.
        let d = f.gate.reconnect(S, result.id.as_bytes(), post(11), f.now).unwrap();
        assert_eq!(fresh(d).reason, StaleReason::PostNeverResumes);
        // Another session's id naming a stream we lack: 3 before 5.
        f.open_session("session-b");
        let d = f.gate.reconnect("session-b", result.id.as_bytes(), Origin::Standalone, f.now).unwrap();
        assert_eq!(fresh(d).reason, StaleReason::OtherSession);
    }
}

mod the_seeds_observed_failures {
    use super::*;

    /// A finished `tools/call`: the result was sent and the client's next cursor is it.
    fn finished() -> (Fixture, Opened, Event, Event) {
        let mut f = Fixture::new();
        let opened = f.post(1);
        let progress = f.emit(opened.stream, "progress");
        let result = f.terminal(opened.stream, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        f.gate.detach(S, opened.stream, opened.attachment, f.now).unwrap();
        (f, opened, progress, result)
    }

    #[test]
    fn the_terminal_event_of_a_completed_stream_as_cursor_on_a_get_replays_nothing() {
        let (mut f, _, _, result) = finished();
        let fr = fresh_because(f.get(&result.id), StaleReason::Completed);
        assert_eq!(fr.stranded, Vec::<RequestId>::new());
        assert_eq!(f.gate.counters().unwrap().events_replayed, 0);
    }

    #[test]
    fn the_same_id_on_a_new_post_runs_only_the_new_call() {
        let (mut f, opened, _, result) = finished();
        let d =
            f.gate.reconnect(S, result.id.as_bytes(), Origin::Request(RequestId::Number(2)), f.now).unwrap();
        let fr = fresh_because(d, StaleReason::PostNeverResumes);
        assert_ne!(fr.opened.stream, opened.stream);
        assert_eq!(f.gate.counters().unwrap().events_replayed, 0);
    }

    #[test]
    fn an_unchanged_session_with_a_cursor_from_a_finished_stream_replays_nothing() {
        let (mut f, _, progress, result) = finished();
        fresh_because(f.get(&result.id), StaleReason::Completed);
        fresh_because(f.get(&progress.id), StaleReason::Completed);
        assert_eq!(f.gate.counters().unwrap().events_replayed, 0);
    }
}

mod state_transitions {
    use super::*;

    #[test]
    fn emitting_after_the_terminal_is_refused() {
        let mut f = Fixture::new();
        let opened = f.post(1);
        f.terminal(opened.stream, "result");
        assert_eq!(f.gate.emit(S, opened.stream, "late".into(), f.now), Err(GateError::StreamFinished));
        assert_eq!(f.gate.terminal(S, opened.stream, "again".into(), f.now), Err(GateError::StreamFinished));
    }

    #[test]
    fn a_standalone_stream_has_no_terminal_event() {
        let mut f = Fixture::new();
        let opened = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        assert_eq!(f.gate.terminal(S, opened.stream, "x".into(), f.now), Err(GateError::NotARequestStream));
    }

    #[test]
    fn events_emitted_while_detached_are_kept_for_the_resume() {
        let mut f = Fixture::new();
        let (opened, events) = f.dropped_stream(1, 1);
        let late = f.emit(opened.stream, "while away");
        assert_eq!(resumed(f.get(&events[0].id)).events, vec![late]);
    }

    #[test]
    fn priming_events_carry_the_retry_hint() {
        let mut f = Fixture::with(Config { retry_ms: Some(2500), ..Config::default() });
        let opened = f.post(1);
        assert_eq!(opened.priming.retry_ms, Some(2500));
        assert_eq!(f.emit(opened.stream, "x").retry_ms, None);
    }
}

mod sessions_and_bounds {
    use super::*;

    #[test]
    fn unknown_and_ended_sessions_are_refused() {
        let mut f = Fixture::new();
        let opened = f.post(1);
        assert_eq!(
            f.gate.reconnect("nobody", b"x", Origin::Standalone, f.now),
            Err(GateError::UnknownSession)
        );
        assert_eq!(f.gate.has_session("nobody"), Ok(false));
        assert_eq!(f.gate.has_session(S), Ok(true));
        f.gate.end_session(S).unwrap();
        assert_eq!(f.gate.has_session(S), Ok(false));
        assert_eq!(
            f.gate.reconnect(S, opened.priming.id.as_bytes(), Origin::Standalone, f.now),
            Err(GateError::UnknownSession)
        );
        assert_eq!(f.gate.end_session(S), Err(GateError::UnknownSession));
    }

    #[test]
    fn session_ids_must_be_visible_ascii_and_bounded() {
        let mut f = Fixture::new();
        for bad in ["", "has space", "tab\t", "é", &"x".repeat(129)] {
            assert_eq!(f.gate.open_session(bad, f.now, [0; 8]), Err(GateError::InvalidSessionId), "{bad:?}");
        }
    }

    #[test]
    fn text_request_ids_are_bounded_and_a_refused_one_changes_nothing() {
        let mut f = Fixture::new();
        let (opened, _) = f.dropped_stream(1, 2);
        let fits = Origin::Request(RequestId::Text("i".repeat(256)));
        assert!(f.gate.open_stream(S, fits, f.now).is_ok());
        let long = Origin::Request(RequestId::Text("i".repeat(257)));
        assert_eq!(f.gate.open_stream(S, long.clone(), f.now), Err(GateError::InvalidRequestId));
        let cursor = opened.priming.id.as_bytes();
        assert_eq!(f.gate.reconnect(S, cursor, long, f.now), Err(GateError::InvalidRequestId));
        let still = resumed(f.get_bytes(cursor));
        assert_eq!(still.events.len(), 2, "the refused reconnect left the stream as it was");
    }

    #[test]
    fn a_request_id_opens_only_one_stream_per_session() {
        let mut f = Fixture::new();
        f.post(1);
        let again = f.gate.open_stream(S, Origin::Request(RequestId::Number(1)), f.now);
        assert_eq!(again, Err(GateError::DuplicateRequestId));
        f.open_session("session-b");
        assert!(f.gate.open_stream("session-b", Origin::Request(RequestId::Number(1)), f.now).is_ok());
    }

    #[test]
    fn an_answered_call_makes_room_when_no_tombstone_is_left_but_a_running_one_never_does() {
        let mut f = Fixture::with(Config { max_streams_per_session: 2, ..Config::default() });
        let a = f.post(1);
        f.terminal(a.stream, "done");
        let b = f.post(2);
        // More calls than stream records in one session keep working: a's answer was sent.
        assert!(f.gate.open_stream(S, Origin::Request(RequestId::Number(3)), f.now).is_ok());
        assert_eq!(f.gate.store().stats().streams, 2);
        // Streams 2 and 3 are both still running: neither may go.
        let fourth = f.gate.open_stream(S, Origin::Request(RequestId::Number(4)), f.now);
        assert_eq!(fourth, Err(GateError::TooManyStreams));
        f.terminal(b.stream, "done");
        fresh_because(f.get(&a.priming.id), StaleReason::Unknown);
    }

    #[test]
    fn tombstones_go_before_answered_calls() {
        let mut f = Fixture::with(Config { max_streams_per_session: 3, ..Config::default() });
        let a = f.post(1);
        let a_result = f.terminal(a.stream, "a done");
        // The client acknowledges a's result: a becomes a tombstone.
        fresh_because(f.get(&a_result.id), StaleReason::Completed);
        let b = f.post(2);
        f.terminal(b.stream, "b done");
        assert!(f.gate.open_stream(S, Origin::Request(RequestId::Number(3)), f.now).is_ok());
        match f.get(&b.priming.id) {
            Decision::Resume(r) => assert!(r.includes_terminal, "b's answer is still there"),
            other => panic!("expected b to resume, got {other:?}"),
        }
    }

    #[test]
    fn a_full_list_frees_an_eighth_of_itself_oldest_answer_first() {
        let mut f = Fixture::with(Config { max_streams_per_session: 16, ..Config::default() });
        let calls: Vec<_> = (1..=16)
            .map(|id| {
                let call = f.post(id);
                f.terminal(call.stream, "done");
                f.now += 1;
                call
            })
            .collect();
        assert!(f.gate.open_stream(S, Origin::Request(RequestId::Number(17)), f.now).is_ok());
        assert_eq!(f.gate.store().stats().streams, 15, "two records went, one came");
        match f.get(&calls[2].priming.id) {
            Decision::Resume(r) => assert!(r.includes_terminal, "the third answer is still there"),
            other => panic!("expected the third call to resume, got {other:?}"),
        }
        // The second answer went with the first; its fresh stream found room without a drop.
        fresh_because(f.get(&calls[1].priming.id), StaleReason::Unknown);
        assert_eq!(f.gate.store().stats().streams, 16);
    }

    #[test]
    fn a_full_session_refuses_new_streams_while_all_are_live() {
        let mut f = Fixture::with(Config { max_streams_per_session: 2, ..Config::default() });
        f.post(1);
        f.post(2);
        let third = f.gate.open_stream(S, Origin::Request(RequestId::Number(3)), f.now);
        assert_eq!(third, Err(GateError::TooManyStreams));
    }

    #[test]
    fn an_aborted_stream_is_a_tombstone_that_makes_room() {
        let mut f = Fixture::with(Config { max_streams_per_session: 2, ..Config::default() });
        let a = f.post(1);
        f.post(2);
        f.gate.abort(S, a.stream).unwrap();
        assert!(f.gate.open_stream(S, Origin::Request(RequestId::Number(3)), f.now).is_ok());
        assert_eq!(f.gate.store().stats().streams, 2, "a's record was dropped");
    }

    #[test]
    fn a_full_gate_reclaims_the_idlest_session_without_work_at_once() {
        let mut f = Fixture::with(Config { max_sessions: 3, ..Config::default() });
        f.open_session("session-b");
        let busy = f.gate.open_stream("session-b", Origin::Standalone, f.now).unwrap();
        f.now += 1;
        f.open_session("session-c");
        f.now += 1;
        let info = f.gate.open_session("session-d", f.now, [1; 8]).unwrap();
        assert_eq!(info.reclaimed.as_deref(), Some(S), "A was idle longest; no idle threshold");
        assert_eq!(f.gate.has_session(S), Ok(false));
        let info = f.gate.open_session("session-e", f.now, [2; 8]).unwrap();
        assert_eq!(info.reclaimed.as_deref(), Some("session-c"), "B holds a live stream");
        assert!(f.gate.reconnect("session-b", busy.priming.id.as_bytes(), Origin::Standalone, f.now).is_ok());
        assert_eq!(f.gate.counters().unwrap().reclaimed_sessions, 2);
    }

    #[test]
    fn work_protects_a_session_for_as_long_as_its_client_may_come_back_for_it() {
        let config = Config { max_sessions: 2, ..Config::default() };
        let mut f = Fixture::with(config.clone());
        // A: a call whose client's connection dropped; B: a result recorded while nobody was
        // attached to receive it. (A result written in full protects nothing.)
        let (running, _) = f.dropped_stream(1, 1);
        f.open_session("session-b");
        let owed = f.gate.open_stream("session-b", Origin::Request(RequestId::Number(1)), f.now).unwrap();
        f.gate.detach("session-b", owed.stream, owed.attachment, f.now).unwrap();
        f.gate.terminal("session-b", owed.stream, "done".into(), f.now).unwrap();
        f.now += config.max_detached();
        assert_eq!(f.gate.open_session("session-c", f.now, [1; 8]), Err(GateError::TooManySessions));
        f.gate.emit(S, running.stream, "still running".into(), f.now).unwrap();
        f.now += 1;
        let info = f.gate.open_session("session-c", f.now, [1; 8]).unwrap();
        assert_eq!(info.reclaimed.as_deref(), Some(S), "nobody came back for A's call in time");
        assert_eq!(f.gate.has_session("session-b"), Ok(true), "B's result is owed until retention");
    }

    #[test]
    fn the_memory_budget_frees_answered_buffers_then_idle_sessions_then_a_streams_own_oldest() {
        let event = "e".repeat(1000);
        let config = Config { max_total_bytes: 16_000, ..Config::default() };
        let mut f = Fixture::with(config.clone());
        let answered = f.post(1);
        for _ in 0..8 {
            f.emit(answered.stream, &event);
        }
        f.terminal(answered.stream, "done");
        f.open_session("session-idle");
        let (running, _) = f.dropped_stream(2, 0);
        let held = |f: &Fixture| f.gate.store().stats().held;
        for _ in 0..8 {
            f.emit(running.stream, &event);
            assert!(held(&f) <= config.max_total_bytes, "{}", held(&f));
        }
        assert_eq!(f.gate.store().stats().events, 8, "the answered stream's buffer went first");
        assert_eq!(f.gate.has_session("session-idle"), Ok(true));
        for _ in 0..6 {
            f.emit(running.stream, &event);
            assert!(held(&f) <= config.max_total_bytes, "{}", held(&f));
        }
        assert_eq!(f.gate.has_session("session-idle"), Ok(false), "then the idle session");
        let events: Vec<Event> = (0..20).map(|_| f.emit(running.stream, &event)).collect();
        assert!(held(&f) <= config.max_total_bytes, "then the stream's own oldest events");
        let kept = resumed(f.get(&events[events.len() - 5].id));
        assert_eq!(kept.events, events[events.len() - 4..], "the newest events stay resumable");
        fresh_because(f.get(&answered.priming.id), StaleReason::Aborted);
    }

    #[test]
    fn past_the_memory_budget_new_streams_are_refused_and_events_are_sent_unbuffered() {
        let mut f = Fixture::with(Config { max_total_bytes: 1_000, ..Config::default() });
        let opened = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        let too_big = f.gate.emit(S, opened.stream, "x".repeat(2_000), f.now).unwrap();
        assert_eq!(too_big.seq, 1, "sent live");
        assert_eq!(f.gate.store().stats().events, 0, "but not buffered");
        assert_eq!(
            f.gate.open_stream(S, Origin::Request(RequestId::Number(1)), f.now),
            Err(GateError::OverBudget)
        );
        assert_eq!(f.gate.open_session("session-b", f.now, [3; 8]), Err(GateError::OverBudget));
        let cursor = opened.priming.id.as_bytes();
        let refused = f.gate.reconnect(S, cursor, Origin::Standalone, f.now);
        assert_eq!(refused, Err(GateError::OverBudget), "a fresh stream needs room too");
        assert!(f.gate.store().stats().held <= 1_000);
        f.gate.configure(Config::default()).unwrap();
        fresh_because(f.get(&opened.priming.id), StaleReason::Evicted);
    }

    #[test]
    fn one_session_holds_at_most_its_share_its_answered_buffers_going_first() {
        let event = "e".repeat(1000);
        let config = Config { max_bytes_per_session: 8_000, ..Config::default() };
        let mut f = Fixture::with(config.clone());
        let answered = f.post(1);
        for _ in 0..4 {
            f.emit(answered.stream, &event);
        }
        f.terminal(answered.stream, "done");
        let (running, _) = f.dropped_stream(2, 0);
        let share = |f: &Fixture| f.gate.store().stats().most_held_by_a_session;
        let events: Vec<Event> = (0..12)
            .map(|_| {
                let e = f.emit(running.stream, &event);
                assert!(share(&f) <= config.max_bytes_per_session, "{}", share(&f));
                e
            })
            .collect();
        let kept = resumed(f.get(&events[events.len() - 5].id));
        assert_eq!(kept.events, events[events.len() - 4..], "the newest events stay resumable");
        assert!(f.gate.store().stats().events < 8, "the answered buffer, then the stream's own oldest");

        f.open_session("session-b");
        let other = f.gate.open_stream("session-b", Origin::Standalone, f.now).unwrap();
        for _ in 0..6 {
            f.gate.emit("session-b", other.stream, event.clone(), f.now).unwrap();
        }
        let all = f.gate.reconnect("session-b", other.priming.id.as_bytes(), Origin::Standalone, f.now);
        assert_eq!(resumed(all.unwrap()).events.len(), 6, "another session keeps its own share");
    }

    #[test]
    fn past_its_share_a_session_gets_no_new_stream_and_others_are_untouched() {
        let config = Config { max_bytes_per_session: 2_000, ..Config::default() };
        let mut f = Fixture::with(config);
        let standalone = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        f.emit(standalone.stream, &"e".repeat(1000));
        let long_id = || Origin::Request(RequestId::Text("r".repeat(256)));
        assert_eq!(f.gate.open_stream(S, long_id(), f.now), Err(GateError::OverBudget));
        assert_eq!(f.gate.store().stats().events, 1, "a refusal frees nothing live");
        f.open_session("session-b");
        assert!(f.gate.open_stream("session-b", long_id(), f.now).is_ok());
    }

    #[test]
    fn invalid_configurations_are_refused() {
        let bad = [
            Config { max_events_per_stream: 0, ..Config::default() },
            Config { max_bytes_per_stream: 0, ..Config::default() },
            Config { max_streams_per_session: 0, ..Config::default() },
            Config { max_bytes_per_session: 0, ..Config::default() },
            Config { max_sessions: 0, ..Config::default() },
            Config { retention_ms: 0, ..Config::default() },
            Config { lease_ms: 0, ..Config::default() },
            Config { max_total_bytes: 0, ..Config::default() },
            Config { signing_key: Some(b"short".to_vec()), ..Config::default() },
        ];
        for config in bad {
            assert!(matches!(Gate::in_memory(config), Err(GateError::InvalidConfig(_))));
        }
    }

    #[test]
    fn a_new_signing_key_makes_old_ids_forged() {
        let mut f = Fixture::new();
        let (_, events) = f.dropped_stream(1, 2);
        f.gate.configure(Config { signing_key: Some(vec![7; 32]), ..Config::default() }).unwrap();
        fresh_because(f.get(&events[0].id), StaleReason::Forged);
    }

    #[test]
    fn errors_and_fresh_reasons_are_counted() {
        let mut f = Fixture::new();
        f.get("garbage");
        let _ = f.gate.open_stream("nobody", Origin::Standalone, f.now);
        let c = f.gate.counters().unwrap();
        assert_eq!(c.fresh_for(StaleReason::Malformed), 1);
        assert_eq!(c.errors, 1);
        assert_eq!(c.sessions, 1);
    }
}

mod exactly_once_per_request_id {
    //! A JSON-RPC request id is claimed once per session, whatever carries the request: a
    //! single POST, or any request of a 2025-03-26 batch (`join-stream`).
    use super::*;

    #[test]
    fn a_batch_claims_each_further_id_once_in_order() {
        let mut f = Fixture::new();
        let batch = f.post(1);
        let ids =
            [RequestId::Number(2), RequestId::Number(1), RequestId::Number(2), RequestId::Text("3".into())];
        let claimed = f.gate.join_stream(S, batch.stream, &ids, f.now).unwrap();
        assert_eq!(claimed, [true, false, false, true], "1 opened the stream; 2 came twice");
        let again = f.gate.open_stream(S, Origin::Request(RequestId::Number(2)), f.now);
        assert_eq!(again, Err(GateError::DuplicateRequestId), "a later single request cannot reuse it");
        let text = f.gate.open_stream(S, Origin::Request(RequestId::Number(3)), f.now);
        assert!(text.is_ok(), "3 and \"3\" are different ids");
    }

    #[test]
    fn only_a_live_request_stream_takes_a_batch_and_a_batch_is_bounded() {
        let mut f = Fixture::new();
        let standalone = f.gate.open_stream(S, Origin::Standalone, f.now).unwrap();
        let join = |f: &mut Fixture, stream, ids: &[RequestId]| f.gate.join_stream(S, stream, ids, f.now);
        assert_eq!(
            join(&mut f, standalone.stream, &[RequestId::Number(9)]),
            Err(GateError::NotARequestStream)
        );
        let answered = f.post(1);
        f.terminal(answered.stream, "done");
        assert_eq!(join(&mut f, answered.stream, &[RequestId::Number(9)]), Err(GateError::StreamFinished));
        let batch = f.post(2);
        let many: Vec<RequestId> =
            (100..100 + resume_gate::MAX_BATCH_REQUESTS as i64).map(RequestId::Number).collect();
        assert_eq!(join(&mut f, batch.stream, &many), Err(GateError::BatchTooLarge));
        assert!(
            f.gate.open_stream(S, Origin::Request(RequestId::Number(100)), f.now).is_ok(),
            "nothing claimed"
        );
    }

    #[test]
    fn a_released_stream_frees_its_ids_for_a_corrected_retry_but_only_before_it_recorded_anything() {
        let mut f = Fixture::new();
        let refused = f.post(1);
        f.gate.join_stream(S, refused.stream, &[RequestId::Number(2)], f.now).unwrap();
        f.gate.release_stream(S, refused.stream).unwrap();
        let retry = f.post(1);
        assert_eq!(f.gate.join_stream(S, retry.stream, &[RequestId::Number(2)], f.now).unwrap(), [true]);
        f.emit(retry.stream, "progress");
        assert_eq!(f.gate.release_stream(S, retry.stream), Err(GateError::StreamFinished), "it ran");
        assert_eq!(
            f.gate.open_stream(S, Origin::Request(RequestId::Number(1)), f.now),
            Err(GateError::DuplicateRequestId)
        );
    }

    #[test]
    fn check_stream_says_who_writes_whether_it_runs_and_what_of_the_batch_was_cancelled() {
        let mut f = Fixture::new();
        let batch = f.post(1);
        f.gate.join_stream(S, batch.stream, &[RequestId::Number(2)], f.now).unwrap();
        let status = f.gate.check_stream(S, batch.stream, batch.attachment).unwrap();
        assert_eq!((status.attached, status.running, status.cancelled.len()), (true, true, 0));
        assert!(f.gate.abort_request(S, &RequestId::Number(2)).unwrap());
        let status = f.gate.check_stream(S, batch.stream, batch.attachment).unwrap();
        assert_eq!((status.running, status.cancelled), (true, vec![RequestId::Number(2)]));
        let stale = f.gate.check_stream(S, batch.stream, batch.attachment.wrapping_add(1)).unwrap();
        assert!(!stale.attached, "another attachment is not the stream's");
    }
}
