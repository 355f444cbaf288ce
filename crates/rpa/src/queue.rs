//! Message queues as §3.4.2 lays them out: each message is eight 32-bit words in shared
//! memory — the record's seven words and a *ready* word — and a queue holds up to 128 of
//! them. The query engine (the producer) writes the seven words, then sets the ready word; a
//! service thread (the consumer) polls the ready word, reads the record, clears the ready
//! word, and from time to time stores the total number of messages it has read into the
//! queue's *buffer read status* word. The producer knows how many it has written, so
//! `written - read_status` tells it whether a slot is free without polling the slots.
//!
//! Besides records, the producer sends *switch* messages (ready word 2, the row in the first
//! word): the records after one belong to another process and program (docs/rpa.md,
//! "Processes"), as an operating system would switch a service's context. They are never
//! dropped and not counted as records.
//!
//! Everything is an atomic word (no `unsafe`): the ready word is written with release and
//! read with acquire ordering, which publishes the record words; the read status likewise
//! publishes the cleared slots back to the producer. One producer and one consumer per queue
//! (the paper assigns one service thread per queue).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Words of a record (the seven a message carries).
pub const RECORD_WORDS: usize = 7;
/// Most messages a queue holds (§3.4.2).
pub const MAX_MESSAGES: usize = 128;

/// What a consumer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// A record.
    Record([u32; RECORD_WORDS]),
    /// The records from here belong to row `.0` (a process and program).
    Switch(u32),
}

/// The ready word of a record message and of a switch message.
const READY_RECORD: u32 = 1;
const READY_SWITCH: u32 = 2;

/// A queue's shared memory.
#[derive(Debug)]
pub struct Queue {
    /// `capacity` messages of 8 words: 7 record words, then the ready word.
    words: Box<[AtomicU32]>,
    capacity: usize,
    /// Messages read so far, stored by the consumer (the buffer read status word).
    read_status: AtomicU64,
    /// Set when the producer is done: the consumer drains what is left and stops.
    closed: AtomicBool,
    /// Set when the consumer has gone: a producer waiting for space gives up.
    abandoned: AtomicBool,
}

impl Queue {
    /// A queue of `capacity` messages (1 to 128).
    pub fn new(capacity: usize) -> Option<Arc<Queue>> {
        if !(1..=MAX_MESSAGES).contains(&capacity) {
            return None;
        }
        Some(Arc::new(Queue {
            words: (0..capacity * 8).map(|_| AtomicU32::new(0)).collect(),
            capacity,
            read_status: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
        }))
    }

    /// Its capacity in messages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// The engine's end of a queue: it knows how many messages it has written.
#[derive(Debug)]
pub struct Producer {
    q: Arc<Queue>,
    written: u64,
    /// The read status last seen (re-read only when the queue looks full).
    seen_read: u64,
}

/// A service thread's end of a queue.
#[derive(Debug)]
pub struct Consumer {
    q: Arc<Queue>,
    read: u64,
    /// Messages read since the read status was last stored.
    unpublished: u64,
    /// Store the read status every this many messages (and whenever the queue is empty).
    batch: u64,
}

/// The two ends of a new queue; the consumer publishes its read status every `batch`
/// messages (1 to the capacity; more batching, fewer stores, later freed slots).
pub fn channel(capacity: usize, batch: usize) -> Option<(Producer, Consumer)> {
    let q = Queue::new(capacity)?;
    let batch = batch.clamp(1, capacity) as u64;
    Some((
        Producer {
            q: Arc::clone(&q),
            written: 0,
            seen_read: 0,
        },
        Consumer {
            q,
            read: 0,
            unpublished: 0,
            batch,
        },
    ))
}

impl Producer {
    /// Writes `record` if a slot is free; `false` when the queue is full.
    #[inline]
    pub fn try_send(&mut self, record: &[u32; RECORD_WORDS]) -> bool {
        self.try_write(record, READY_RECORD)
    }

    /// Says that the records from here belong to row `row`, waiting for a slot; `false` if
    /// the consumer has gone.
    pub fn send_switch(&mut self, row: u32) -> bool {
        let mut m = [0u32; RECORD_WORDS];
        m[0] = row;
        self.write_waiting(&m, READY_SWITCH).is_some()
    }

    #[inline]
    fn try_write(&mut self, record: &[u32; RECORD_WORDS], ready: u32) -> bool {
        let cap = self.q.capacity as u64;
        if self.written - self.seen_read >= cap {
            self.seen_read = self.q.read_status.load(Ordering::Acquire);
            if self.written - self.seen_read >= cap {
                return false;
            }
        }
        let base = (self.written % cap) as usize * 8;
        for (w, v) in self.q.words[base..base + RECORD_WORDS].iter().zip(record) {
            w.store(*v, Ordering::Relaxed);
        }
        self.q.words[base + 7].store(ready, Ordering::Release);
        self.written += 1;
        true
    }

    /// Writes `record`, waiting while the queue is full (back-pressure: an `always` query
    /// loses nothing). Returns how many times it found the queue full, or `None` if the
    /// consumer has gone (the record is lost and the caller must say so).
    pub fn send_waiting(&mut self, record: &[u32; RECORD_WORDS]) -> Option<u64> {
        self.write_waiting(record, READY_RECORD)
    }

    /// Writes `m` with ready word `ready`, waiting while the queue is full; the times it
    /// found it full, or `None` if the consumer has gone.
    fn write_waiting(&mut self, m: &[u32; RECORD_WORDS], ready: u32) -> Option<u64> {
        let mut waits = 0u64;
        while !self.try_write(m, ready) {
            if self.q.abandoned.load(Ordering::Acquire) {
                return None;
            }
            waits += 1;
            if waits % 64 == 0 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        Some(waits)
    }

    /// Messages written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

impl Drop for Producer {
    /// The producer is done: the consumer reads what is left and stops.
    fn drop(&mut self) {
        self.q.closed.store(true, Ordering::Release);
    }
}

impl Drop for Consumer {
    /// The consumer has gone: a producer waiting for space stops waiting.
    fn drop(&mut self) {
        self.q.abandoned.store(true, Ordering::Release);
    }
}

impl Consumer {
    /// Reads the next message if one is ready.
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received> {
        let cap = self.q.capacity as u64;
        let base = (self.read % cap) as usize * 8;
        let ready = self.q.words[base + 7].load(Ordering::Acquire);
        if ready == 0 {
            self.publish();
            return None;
        }
        let mut r = [0u32; RECORD_WORDS];
        for (v, w) in r.iter_mut().zip(&self.q.words[base..base + RECORD_WORDS]) {
            *v = w.load(Ordering::Relaxed);
        }
        self.q.words[base + 7].store(0, Ordering::Relaxed);
        self.read += 1;
        self.unpublished += 1;
        if self.unpublished >= self.batch {
            self.publish();
        }
        Some(if ready == READY_SWITCH {
            Received::Switch(r[0])
        } else {
            Received::Record(r)
        })
    }

    /// Stores the read status now (the producer may reuse every slot read so far).
    pub fn publish(&mut self) {
        if self.unpublished > 0 {
            self.q.read_status.store(self.read, Ordering::Release);
            self.unpublished = 0;
        }
    }

    /// Messages read so far (records and switches).
    pub fn read(&self) -> u64 {
        self.read
    }

    /// Reads every message until the producer is done and the queue is empty, calling `f`
    /// on each: a service thread's loop (it spins briefly, then yields, while the queue is
    /// empty).
    pub fn drain(&mut self, mut f: impl FnMut(Received)) {
        let mut idle = 0u32;
        loop {
            match self.try_recv() {
                Some(m) => {
                    idle = 0;
                    f(m);
                }
                None => {
                    // `closed` is stored after the producer's last ready word: seeing it
                    // (acquire), one more look finds anything written before it
                    if self.q.closed.load(Ordering::Acquire) {
                        while let Some(m) = self.try_recv() {
                            f(m);
                        }
                        self.publish();
                        return;
                    }
                    // spin, then yield, then nap: an idle service thread (a sampled query
                    // sends rarely) must not take a core from the guest's machine
                    idle = idle.saturating_add(1);
                    if idle < 64 {
                        std::hint::spin_loop();
                    } else if idle < 80 {
                        std::thread::yield_now();
                    } else {
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u32) -> [u32; RECORD_WORDS] {
        [i, i ^ 0xffff_ffff, i.wrapping_mul(3), 4, 5, 6, i]
    }

    #[test]
    fn a_full_queue_refuses_until_the_reader_publishes() {
        let (mut p, mut c) = channel(4, 2).unwrap();
        assert!((0..4).all(|i| p.try_send(&rec(i))));
        assert!(!p.try_send(&rec(4)), "full");
        assert_eq!(c.try_recv(), Some(Received::Record(rec(0))));
        assert!(!p.try_send(&rec(4)), "read, but not yet published");
        assert_eq!(c.try_recv(), Some(Received::Record(rec(1)))); // the batch of 2 publishes
        assert!(p.try_send(&rec(4)) && p.try_send(&rec(5)));
        assert!(!p.try_send(&rec(6)));
        for i in 2..6 {
            assert_eq!(c.try_recv(), Some(Received::Record(rec(i))));
        }
        assert_eq!(c.try_recv(), None);
        assert_eq!((p.written(), c.read()), (6, 6));
        assert!(channel(0, 1).is_none() && channel(129, 1).is_none());
    }

    #[test]
    fn drain_reads_everything_written_before_the_producer_closed() {
        let (mut p, mut c) = channel(8, 4).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            c.drain(|m| match m {
                Received::Record(m) => got.push(m[0]),
                Received::Switch(r) => got.push(1_000_000 + r),
            });
            got
        });
        for i in 0..1000 {
            assert!(p.send_waiting(&rec(i)).is_some());
            if i == 500 {
                assert!(p.send_switch(3));
            }
        }
        drop(p);
        let got = reader.join().unwrap();
        let mut want: Vec<u32> = (0..1000).collect();
        want.insert(501, 1_000_003);
        assert_eq!(got, want, "a switch comes in order with the records");
    }

    #[test]
    fn a_waiting_producer_gives_up_when_the_consumer_has_gone() {
        let (mut p, c) = channel(2, 1).unwrap();
        assert!(p.try_send(&rec(0)) && p.try_send(&rec(1)));
        drop(c);
        assert_eq!(
            p.send_waiting(&rec(2)),
            None,
            "the message is lost, not waited for forever"
        );
    }

    #[test]
    fn across_threads_every_message_arrives_once_in_order() {
        let (mut p, mut c) = channel(128, 32).unwrap();
        let n = 200_000u32;
        let reader = std::thread::spawn(move || {
            let mut next = 0u32;
            let mut sum = 0u64;
            while next < n {
                match c.try_recv() {
                    Some(Received::Record(r)) => {
                        assert_eq!(r, rec(next));
                        sum += u64::from(r[0]);
                        next += 1;
                    }
                    Some(Received::Switch(_)) => panic!("no switch was sent"),
                    None => std::thread::yield_now(),
                }
            }
            assert_eq!(c.try_recv(), None);
            sum
        });
        for i in 0..n {
            while !p.try_send(&rec(i)) {
                std::thread::yield_now(); // back-pressure: an `always` query waits
            }
        }
        let sum = reader.join().unwrap();
        assert_eq!(sum, u64::from(n) * u64::from(n - 1) / 2);
    }
}
