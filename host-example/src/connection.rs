//! One SSE response body: the frames a stream's exchange queued for this connection, handed to
//! hyper as they come (every frame already queued joins the chunk, so that what is ready leaves
//! in one write), and, when hyper drops the body (finished, or the client went away), the
//! exchange told.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use axum::body::Bytes;
use bytes::BytesMut;
use tokio::sync::mpsc;

use crate::app::App;
use crate::serving::Served;

/// Frames already queued are joined into one body chunk up to this size.
const COALESCE_BYTES: usize = 64 << 10;
/// Frames queued for one connection beyond its first ones before it counts as too slow.
pub const QUEUE: usize = 256;

pub struct SseBody {
    rx: mpsc::Receiver<Bytes>,
    _ended: Ended,
}

/// Tells the stream's exchange when the connection attached as `attachment` ends.
struct Ended {
    app: Arc<App>,
    served: Arc<Served>,
    attachment: u32,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.app.attached.fetch_sub(1, Ordering::Relaxed);
        if self.served.resumable {
            self.app.active(&self.served.key.0, Some(false));
        } else {
            self.app.stateless.fetch_sub(1, Ordering::Relaxed);
        }
        if !self.served.requests.is_empty() {
            self.app.answering.fetch_sub(1, Ordering::Relaxed);
        }
        self.served.connection_ended(&self.app, self.attachment);
    }
}

impl SseBody {
    pub fn new(rx: mpsc::Receiver<Bytes>, app: Arc<App>, served: Arc<Served>, attachment: u32) -> Self {
        app.attached.fetch_add(1, Ordering::Relaxed);
        // A stateless stream's slot was taken before (`App::admit_stateless`); its key is no
        // session, so it is not tracked as one.
        if served.resumable {
            app.active(&served.key.0, Some(true));
        }
        if !served.requests.is_empty() {
            app.answering.fetch_add(1, Ordering::Relaxed);
        }
        Self { rx, _ended: Ended { app, served, attachment } }
    }
}

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    /// The next frame, together with every frame already queued behind it (up to
    /// `COALESCE_BYTES`), so that what is ready leaves in one write.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(first) = std::task::ready!(self.rx.poll_recv(cx)) else {
            return Poll::Ready(None);
        };
        let mut chunk = BytesMut::new();
        let mut next = Some(first);
        while let Some(frame) = next.take() {
            chunk.extend_from_slice(&frame);
            if chunk.len() < COALESCE_BYTES {
                next = self.rx.try_recv().ok();
            }
        }
        Poll::Ready(Some(Ok(chunk.freeze())))
    }
}
