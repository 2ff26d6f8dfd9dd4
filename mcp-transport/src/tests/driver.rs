//! A host in the tests: serves an exchange to its end over the in-process gate. Tools finish
//! at once; their waits move a clock (the host's and the gate's alike); what is written, and
//! the journal, are kept.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::InProcess;
use crate::exchange::Exchange;
use crate::gate::GateApi;
use crate::journal::{AppendError, JournalPage};
use crate::tools::ToolHost;

pub struct Driver<'a> {
    pub gate: &'a mut InProcess,
    pub journal: &'a RefCell<Vec<String>>,
    pub now: u64,
    /// After this many recorded events the session is ended under the call.
    pub vanish_after: Option<usize>,
    pub written: Vec<String>,
}

impl<'a> Driver<'a> {
    /// A host at time 0 over `gate`, its `append`s in `journal`.
    pub fn new(gate: &'a mut InProcess, journal: &'a RefCell<Vec<String>>) -> Self {
        Self { gate, journal, now: 0, vanish_after: None, written: Vec::new() }
    }

    pub fn serve(&mut self, exchange: &mut Exchange) {
        loop {
            self.drain(exchange);
            if exchange.is_finished() {
                return;
            }
            if let Some(call) = exchange.poll_call(&mut *self.gate, self.now) {
                let response = {
                    let tools =
                        Tools { driver: RefCell::new(&mut *self), exchange: RefCell::new(&mut *exchange) };
                    let mut future = pin!(call.respond(&tools));
                    let Poll::Ready(response) = future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
                    else {
                        panic!("the test tools never wait")
                    };
                    response
                };
                self.vanish_maybe();
                exchange.handle_response(&mut *self.gate, &response);
                continue;
            }
            match exchange.poll_timeout() {
                Some(at) => {
                    self.advance_to(at);
                    exchange.handle_timeout(&mut *self.gate, self.now);
                }
                None => return,
            }
        }
    }

    fn drain(&mut self, exchange: &mut Exchange) {
        while let Some(frame) = exchange.poll_transmit() {
            self.written.push(frame);
        }
    }

    fn advance_to(&mut self, at: u64) {
        if at > self.now {
            self.gate.advance(at - self.now);
            self.now = at;
        }
    }

    fn vanish_maybe(&mut self) {
        if let Some(n) = self.vanish_after {
            if n == 0 {
                for id in ["session-1", "session-2", "session-3"] {
                    let _ = self.gate.end_session(id);
                }
            }
            self.vanish_after = n.checked_sub(1);
        }
    }
}

struct Tools<'d, 'a> {
    driver: RefCell<&'d mut Driver<'a>>,
    exchange: RefCell<&'d mut Exchange>,
}

impl ToolHost for Tools<'_, '_> {
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
        let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
        let end = driver.now + ms;
        let mut going = exchange.call_running();
        while going && driver.now < end {
            let at = exchange.poll_timeout().map_or(end, |t| t.min(end));
            driver.advance_to(at);
            let now = driver.now;
            if exchange.poll_timeout().is_some_and(|t| t <= now) {
                exchange.handle_timeout(&mut *driver.gate, now);
            }
            driver.drain(&mut exchange);
            going = exchange.call_running();
        }
        std::future::ready(going)
    }
    fn notify(&self, message: String) -> bool {
        let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
        driver.vanish_maybe();
        let going = exchange.handle_event(&mut *driver.gate, &message);
        driver.drain(&mut exchange);
        going
    }
    fn close_connection(&self) {
        let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
        exchange.close_connection(&mut *driver.gate);
    }
    fn append(&self, line: &str) -> Result<u64, AppendError> {
        let driver = self.driver.borrow();
        driver.journal.borrow_mut().push(line.to_owned());
        Ok(driver.journal.borrow().len() as u64)
    }
    fn journal(&self, _: u64, _: u64) -> Result<JournalPage, String> {
        Ok(JournalPage::default())
    }
}
