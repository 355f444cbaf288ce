#![allow(missing_docs)]
//! Host queue throughput: one producer thread sends N seven-word records to one consumer
//! thread through the RPA message queue (§3.4.2 protocol: ready words and a batched read
//! status), side by side with crossbeam's `ArrayQueue` and `rtrb`'s ring buffer, each with
//! 128 slots (the paper's largest queue).
//!
//!     cargo bench -p outcrop-rpa --bench queue
//!
//! Results: docs/BENCHMARKS.md, "Relational profiling".

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use outcrop_rpa::queue::{channel, Received, RECORD_WORDS};

const N: u32 = 1 << 20;
const CAP: usize = 128;

fn rec(i: u32) -> [u32; RECORD_WORDS] {
    [i, i, i, i, i, i, i]
}

fn rpa(batch: usize) -> u64 {
    let (mut p, mut c) = channel(CAP, batch).unwrap();
    let reader = std::thread::spawn(move || {
        let (mut got, mut sum) = (0u32, 0u64);
        while got < N {
            if let Some(Received::Record(r)) = c.try_recv() {
                sum += u64::from(r[0]);
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        sum
    });
    for i in 0..N {
        while !p.try_send(&rec(i)) {
            std::hint::spin_loop();
        }
    }
    reader.join().unwrap()
}

fn crossbeam() -> u64 {
    let q = std::sync::Arc::new(crossbeam_queue::ArrayQueue::<[u32; RECORD_WORDS]>::new(CAP));
    let q2 = std::sync::Arc::clone(&q);
    let reader = std::thread::spawn(move || {
        let (mut got, mut sum) = (0u32, 0u64);
        while got < N {
            if let Some(r) = q2.pop() {
                sum += u64::from(r[0]);
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        sum
    });
    for i in 0..N {
        let mut r = rec(i);
        while let Err(back) = q.push(r) {
            r = back;
            std::hint::spin_loop();
        }
    }
    reader.join().unwrap()
}

fn rtrb_queue() -> u64 {
    let (mut p, mut c) = rtrb::RingBuffer::<[u32; RECORD_WORDS]>::new(CAP);
    let reader = std::thread::spawn(move || {
        let (mut got, mut sum) = (0u32, 0u64);
        while got < N {
            if let Ok(r) = c.pop() {
                sum += u64::from(r[0]);
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        sum
    });
    for i in 0..N {
        while p.push(rec(i)).is_err() {
            std::hint::spin_loop();
        }
    }
    reader.join().unwrap()
}

fn queues(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue, 2^20 records of 7 words, 128 slots");
    g.throughput(Throughput::Elements(u64::from(N)));
    g.sample_size(10);
    for batch in [1, 32] {
        g.bench_function(format!("RPA queue, read status every {batch}"), |b| {
            b.iter(|| rpa(batch))
        });
    }
    g.bench_function("crossbeam ArrayQueue", |b| b.iter(crossbeam));
    g.bench_function("rtrb RingBuffer", |b| b.iter(rtrb_queue));
    g.finish();
}

criterion_group!(benches, queues);
criterion_main!(benches);
