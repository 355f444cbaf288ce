//! The pipeline: bounded single-producer/single-consumer rings that carry batches of events
//! from the machine thread to service threads, as the papers' service threads and strata
//! servers consume a shared-memory queue (WPP §II–III.A; RPA §3).
//!
//! ```text
//!  machine thread ──batches of T──▶ service thread
//!  (only appends)  ◀── empty batches back ──
//! ```
//!
//! The producer does nothing per event but append to a batch; batches are recycled, so steady
//! state allocates nothing. Nothing is dropped: a full ring blocks the producer. If the
//! consumer goes away (its stage failed), [`RingSender::push`] says so and the run stops.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// The producer's end of a ring.
pub struct RingSender<T> {
    batch: Vec<T>,
    cap: usize,
    tx: SyncSender<Vec<T>>,
    empty: Receiver<Vec<T>>,
    closed: bool,
}

/// The consumer's end of a ring.
pub struct RingReceiver<T> {
    rx: Receiver<Vec<T>>,
    empty: SyncSender<Vec<T>>,
}

/// A ring of `batches` batches of `batch_len` events each (both at least 1).
pub fn ring<T>(batch_len: usize, batches: usize) -> (RingSender<T>, RingReceiver<T>) {
    let cap = batch_len.max(1);
    let (tx, rx) = sync_channel(batches.max(1));
    let (empty_tx, empty_rx) = sync_channel(batches.max(1) + 2);
    (
        RingSender {
            batch: Vec::with_capacity(cap),
            cap,
            tx,
            empty: empty_rx,
            closed: false,
        },
        RingReceiver {
            rx,
            empty: empty_tx,
        },
    )
}

impl<T> RingSender<T> {
    /// Appends one event; hands the batch over when it is full. Returns false once the
    /// consumer has gone (then events are discarded: stop the producer).
    #[inline]
    pub fn push(&mut self, event: T) -> bool {
        self.batch.push(event);
        if self.batch.len() >= self.cap {
            self.send();
        }
        !self.closed
    }

    /// Appends events in order ([`RingSender::push`] for each, handing over each batch that
    /// fills). Returns false once the consumer has gone.
    pub fn extend(&mut self, events: &[T]) -> bool
    where
        T: Copy,
    {
        let mut rest = events;
        while !rest.is_empty() {
            let room = self.cap.saturating_sub(self.batch.len()).max(1);
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.batch.extend_from_slice(now);
            if self.batch.len() >= self.cap {
                self.send();
            }
            rest = later;
        }
        !self.closed
    }

    /// Whether the consumer has gone.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Hands over a partly filled batch (at the end of a run).
    pub fn flush(&mut self) {
        if !self.batch.is_empty() {
            self.send();
        }
    }

    #[cold]
    fn send(&mut self) {
        if self.closed {
            self.batch.clear();
            return;
        }
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.cap));
        let full = std::mem::replace(&mut self.batch, next);
        if self.tx.send(full).is_err() {
            self.closed = true;
        }
    }
}

impl<T> Drop for RingSender<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

impl<T> RingReceiver<T> {
    /// Calls `f` with every batch, in order, until the producer is dropped or `f` returns
    /// false (which closes the ring: the producer learns at its next hand-over).
    pub fn for_each_batch(self, mut f: impl FnMut(&[T]) -> bool) {
        for mut batch in self.rx.iter() {
            if !f(&batch) {
                return;
            }
            batch.clear();
            let _ = self.empty.try_send(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_arrives_in_order() {
        let (mut tx, rx) = ring::<u64>(7, 2);
        let got = std::thread::scope(|s| {
            let h = s.spawn(move || {
                let mut got = Vec::new();
                rx.for_each_batch(|b| {
                    got.extend_from_slice(b);
                    true
                });
                got
            });
            for i in 0..1000 {
                assert!(tx.push(i));
            }
            drop(tx);
            h.join().unwrap()
        });
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_consumer_that_stops_closes_the_ring() {
        let (mut tx, rx) = ring::<u64>(4, 1);
        std::thread::scope(|s| {
            s.spawn(move || rx.for_each_batch(|_| false));
            let mut pushed = 0;
            while tx.push(1) {
                pushed += 1;
                assert!(pushed < 1000, "the producer never learned");
            }
            assert!(tx.is_closed());
        });
    }
}
