//! Layouts the fixtures do not have, written here byte by byte as the kernel and perf write
//! them: the LBR's hardware index and kernel 6.8's branch counters, wrong-path entries, pipe
//! mode, several attributes told apart by sample id, and two processes with the program
//! mapped at different addresses.

use outcrop_perf::{Event, Importer, Reader, Segment, Target};
use std::alloc::System;
use std::io::Cursor;

/// Counts the bytes allocated (a test checks that memory follows the input).
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<System> = &stats_alloc::INSTRUMENTED_SYSTEM;

const IP: u64 = 1;
const TID: u64 = 2;
const IDENTIFIER: u64 = 1 << 16;
const BRANCH_STACK: u64 = 1 << 11;
const HW_INDEX: u64 = 1 << 17;
const COUNTERS: u64 = 1 << 19;

/// A 128-byte `perf_event_attr`.
fn attr(sample_type: u64, branch_sample_type: u64) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[16..24].copy_from_slice(&1000u64.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    a[72..80].copy_from_slice(&branch_sample_type.to_le_bytes());
    a
}

fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&kind.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn mmap2(pid: u32, start: u64, len: u64, pgoff: u64, path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend(words(&[start, len, pgoff]));
    b.extend([0u8; 24]); // maj, min, ino, ino_generation
    b.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ | PROT_EXEC
    b.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    b.extend_from_slice(path.as_bytes());
    b.resize(b.len().div_ceil(8) * 8 + 8, 0);
    record(10, 2, &b)
}

/// A seekable perf.data of `attrs` (attribute bytes, ids) and data records.
fn file(attrs: &[(Vec<u8>, Vec<u64>)], records: &[Vec<u8>]) -> Vec<u8> {
    let attr_size = 128 + 16;
    let attrs_off = 104u64;
    let ids_off = attrs_off + (attrs.len() * attr_size) as u64;
    let mut ids = Vec::new();
    let mut sec = Vec::new();
    for (a, i) in attrs {
        sec.extend_from_slice(a);
        sec.extend(words(&[ids_off + ids.len() as u64, (i.len() * 8) as u64]));
        ids.extend(words(i));
    }
    let data: Vec<u8> = records.concat();
    let data_off = ids_off + ids.len() as u64;
    let mut f = words(&[0x3245_4c49_4652_4550, 104, attr_size as u64]);
    f.extend(words(&[
        attrs_off,
        sec.len() as u64,
        data_off,
        data.len() as u64,
        0,
        0,
    ]));
    f.extend([0u8; 32]);
    f.extend(sec);
    f.extend(ids);
    f.extend(data);
    f
}

fn read(bytes: Vec<u8>) -> (Reader<Cursor<Vec<u8>>>, Vec<Event>) {
    let len = bytes.len() as u64;
    let mut r = Reader::new(Cursor::new(bytes), len).unwrap();
    let mut out = Vec::new();
    while let Some((_, e)) = r.next_event().unwrap() {
        out.push(e);
    }
    (r, out)
}

fn target() -> Target {
    Target {
        name: "prog".into(),
        segments: vec![Segment {
            offset: 0x1000,
            vaddr: 0x1000,
            size: 0x1000,
        }],
        ..Target::default()
    }
}

#[test]
fn hw_idx_counters_cycles_flags_and_wrong_path() {
    let st = IP | TID | BRANCH_STACK;
    let flags = |mispred: u64, cycles: u64, spec: u64| {
        mispred | (1 - mispred) << 1 | cycles << 4 | spec << 24
    };
    let mut body = words(&[0x55_0000_1010]);
    body.extend_from_slice(&7u32.to_le_bytes());
    body.extend_from_slice(&7u32.to_le_bytes());
    body.extend(words(&[3, 42])); // nr, hw_idx
    body.extend(words(&[0x55_0000_1020, 0x55_0000_1000, flags(1, 17, 0)]));
    body.extend(words(&[0x55_0000_1030, 0x55_0000_1040, flags(0, 3, 1)])); // wrong path
    body.extend(words(&[0x55_0000_1008, 0x55_0000_1010, flags(0, 5, 2)]));
    body.extend(words(&[9, 8, 7])); // counters
    let recs = vec![
        mmap2(7, 0x55_0000_0000, 0x3000, 0, "/bin/prog"),
        record(9, 2, &body),
    ];
    let (r, evs) = read(file(&[(attr(st, HW_INDEX | COUNTERS), vec![1])], &recs));
    let Event::Sample(s) = &evs[1] else {
        panic!("{evs:?}")
    };
    assert_eq!(s.hw_idx, Some(42));
    assert_eq!(s.branches.len(), 3);
    assert!(s.branches[0].mispred && !s.branches[0].predicted && s.branches[0].cycles == 17);
    assert_eq!(s.branches[1].spec, 1);
    assert_eq!(
        s.branches.iter().map(|b| b.counters).collect::<Vec<_>>(),
        vec![Some(9), Some(8), Some(7)]
    );
    let mut imp = Importer::new(target(), &r.build_ids);
    for e in &evs {
        imp.event(e);
    }
    let out = imp.finish("prog", "", 1000);
    assert_eq!(out.stats.wrong_path, 1);
    assert_eq!(out.stats.with_hw_idx, 1);
    assert_eq!(out.stats.with_counters, 3);
    assert_eq!(out.stats.mispredicted, 1);
    // oldest first, link-time addresses, the wrong-path entry dropped
    let t: Vec<_> = out
        .samples
        .traces
        .keys()
        .next()
        .unwrap()
        .iter()
        .map(|r| (r.from, r.to))
        .collect();
    assert_eq!(t, vec![(0x1008, 0x1010), (0x1020, 0x1000)]);
    assert_eq!(out.ips.get(&0x1010), Some(&1));
}

#[test]
fn two_processes_with_the_program_at_different_addresses_are_kept_apart() {
    let st = IP | TID | BRANCH_STACK;
    let sample = |pid: u32, base: u64| {
        let mut b = words(&[base + 0x1010]);
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend(words(&[1, base + 0x1020, base + 0x1000, 0]));
        record(9, 2, &b)
    };
    let fork = |pid: u32, ppid: u32| {
        record(
            7,
            0,
            &[
                pid.to_le_bytes(),
                ppid.to_le_bytes(),
                pid.to_le_bytes(),
                ppid.to_le_bytes(),
                [0; 4],
                [0; 4],
            ]
            .concat(),
        )
    };
    let recs = vec![
        mmap2(1, 0x10_0000_0000, 0x3000, 0, "/x/prog"),
        mmap2(2, 0x20_0000_0000, 0x3000, 0, "/y/prog"),
        mmap2(3, 0x30_0000_0000, 0x3000, 0, "/x/other"),
        sample(1, 0x10_0000_0000),
        sample(2, 0x20_0000_0000),
        sample(3, 0x30_0000_0000), // another program: outside
        fork(4, 1),
        sample(4, 0x10_0000_0000), // the child has its parent's mapping
    ];
    let (r, evs) = read(file(&[(attr(st, 0), vec![])], &recs));
    let mut imp = Importer::new(target(), &r.build_ids);
    for e in &evs {
        imp.event(e);
    }
    let out = imp.finish("prog", "", 0);
    assert_eq!(out.stats.samples, 4);
    assert_eq!(out.stats.samples_in_program, 3);
    assert_eq!(out.stats.processes.len(), 4);
    assert_eq!(out.ips.get(&0x1010), Some(&3));
    let t = out.samples.traces.iter().next().unwrap();
    assert_eq!((t.0[0].from, t.0[0].to, *t.1), (0x1020, 0x1000, 3));
}

#[test]
fn pipe_mode_and_attributes_told_apart_by_identifier() {
    let st = IDENTIFIER | IP | TID;
    let header_attr = |a: Vec<u8>, id: u64| {
        let mut b = a;
        b.extend(words(&[id]));
        record(64, 0, &b)
    };
    let sample = |id: u64, ip: u64| {
        let mut b = words(&[id, ip]);
        b.extend([0u8; 8]);
        record(9, 2, &b)
    };
    let mut f = words(&[0x3245_4c49_4652_4550, 16]);
    for r in [
        header_attr(attr(st, 0), 100),
        header_attr(attr(st | BRANCH_STACK, 0), 200),
        sample(100, 0x10),
        sample(200, 0x20),
    ] {
        f.extend(r);
    }
    // the second attribute's sample would need a branch stack: it has none, so it is
    // damaged, and the error names the offset where the stack's size should be
    let len = f.len() as u64;
    let mut r = Reader::new(Cursor::new(f), len).unwrap();
    assert!(r.pipe);
    let Some((_, Event::Sample(s))) = r.next_event().unwrap() else {
        panic!()
    };
    assert_eq!((s.attr, s.ip), (0, Some(0x10)));
    let e = r.next_event().unwrap_err().to_string();
    assert!(e.contains("branch stack size"), "{e}");
    assert_eq!(r.attrs.len(), 2);
}

#[test]
fn data_addresses_of_samples_in_the_program_are_kept() {
    const ADDR: u64 = 1 << 3;
    let st = IP | TID | ADDR;
    let sample = |ip: u64, addr: u64| {
        let mut b = words(&[ip]);
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend(words(&[addr]));
        record(9, 2, &b)
    };
    let recs = vec![
        mmap2(7, 0x55_0000_0000, 0x3000, 0, "/bin/prog"),
        sample(0x55_0000_1010, 0x7fff_0000),
        sample(0x55_0000_1020, 0x7fff_0000),
        sample(0x7f00_0000_0000, 0x1234), // not the program's: its address is not kept
    ];
    let (r, evs) = read(file(&[(attr(st, 0), vec![])], &recs));
    let mut imp = Importer::new(target(), &r.build_ids);
    let hits: Vec<_> = evs.iter().filter_map(|e| imp.event(e)).collect();
    assert_eq!(
        hits,
        vec![(0x1010, Some(0x7fff_0000)), (0x1020, Some(0x7fff_0000))]
    );
    let out = imp.finish("prog", "", 0);
    assert_eq!(
        out.data_addrs.into_iter().collect::<Vec<_>>(),
        vec![(0x7fff_0000, 2)]
    );
    assert_eq!(out.samples.traces.len(), 0, "no branch stacks");
}

/// A process with 2,000 program mappings forked 40,000 times: the children share their
/// parent's mappings until one maps more (copy on write), so memory follows the input, not
/// mappings × processes (it once reached 1.9 GB and aborted under a memory cap).
#[test]
fn forked_processes_share_their_parents_mappings() {
    let mut imp = Importer::new(target(), &[]);
    for i in 0..2000u64 {
        let m = outcrop_perf::Mmap {
            pid: 1,
            tid: 1,
            start: 0x55_0000_0000 + i * 0x10_0000,
            len: 0x1000,
            pgoff: 0x1000,
            exec: true,
            path: "/bin/prog".into(),
            build_id: None,
        };
        imp.event(&Event::Mmap(m));
    }
    let region = stats_alloc::Region::new(GLOBAL);
    for pid in 2..40_002u32 {
        imp.event(&Event::Task {
            fork: true,
            pid,
            ppid: 1,
            tid: pid,
        });
    }
    let grown = region.change().bytes_allocated;
    // a map entry per child (a few MB with the hash table's growth), not 40,000 copies of
    // 2,000 mappings (1.9 GB)
    assert!(grown < 64 << 20, "{grown} bytes for 40,000 forks");
    // each child resolves addresses in its parent's mappings, and maps of its own stay its own
    assert_eq!(
        imp.vaddr(40_001, 0x55_0000_0000 + 1999 * 0x10_0000),
        Some(0x1000)
    );
    assert_eq!(imp.vaddr(7, 0x55_0000_0010), Some(0x1010));
}

/// A call chain (`perf record -g`) as the kernel writes it: context markers, then each
/// context's addresses innermost first. Frames come out in the program (link-time address),
/// in a library (file offset and address), in the kernel, or unmapped; a caller's frame is
/// at its return address less one; a guest's context is skipped.
#[test]
fn call_chains_become_frames_through_every_mapping() {
    const CALLCHAIN: u64 = 1 << 5;
    let st = IP | TID | CALLCHAIN;
    let sample = |misc: u16, ip: u64, chain: &[u64]| {
        let mut b = words(&[ip]);
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend(words(&[chain.len() as u64]));
        b.extend(words(chain));
        record(9, misc, &b)
    };
    let user = outcrop_perf::CONTEXT_USER;
    let kernel = outcrop_perf::CONTEXT_KERNEL;
    let guest = -2048i64 as u64; // PERF_CONTEXT_GUEST
    let recs = vec![
        mmap2(7, 0x55_0000_0000, 0x3000, 0, "/bin/prog"),
        mmap2(7, 0x7f00_0000_0000, 0x2000, 0x1000, "/lib/libc.so.6"),
        // user: libc's qsort, called from the program
        sample(
            2,
            0x7f00_0000_0100,
            &[user, 0x7f00_0000_0100, 0x55_0000_1011, 0x10],
        ),
        // kernel: a page fault under the program's code (the user IP it interrupted is exact)
        sample(
            1,
            0xffff_ffff_8100_0000,
            &[
                kernel,
                0xffff_ffff_8100_0000,
                0xffff_ffff_8100_0010,
                user,
                0x55_0000_1020,
            ],
        ),
        sample(2, 0x55_0000_1030, &[guest, 0x1234, user, 0x55_0000_1030]),
    ];
    let (r, evs) = read(file(&[(attr(st, 0), vec![])], &recs));
    assert!(matches!(&evs[2], Event::Sample(s) if s.callchain.len() == 4));
    let mut imp = Importer::new(target(), &r.build_ids);
    let mut frames = Vec::new();
    for e in &evs {
        imp.event(e);
        if let Event::Sample(s) = e {
            assert!(imp.runs_program(s.pid));
            frames.push(imp.frames(s));
        }
    }
    use outcrop_perf::Frame::*;
    assert_eq!(
        frames[0],
        [
            Object {
                object: 1,
                offset: 0x1100,
                addr: 0x7f00_0000_0100
            },
            Program(0x1010),
            Unmapped(0xf)
        ]
    );
    assert_eq!(
        frames[1],
        [
            Kernel(0xffff_ffff_8100_0000),
            Kernel(0xffff_ffff_8100_000f),
            Program(0x1020)
        ]
    );
    assert_eq!(frames[2], [Program(0x1030)]);
    let out = imp.finish("prog", "", 0);
    assert_eq!(out.stats.callchains, 3);
    assert_eq!(out.objects.len(), 2);
    assert!(out.objects[0].program && !out.objects[1].program);
    assert_eq!((out.objects[0].samples, out.objects[1].samples), (1, 1));
}

/// Two CPUs' buffers: a sample taken in the program is written before the `MMAP` record
/// that mapped it (an earlier time stamp in its `sample_id` trailer). Read in file order the
/// sample is outside the program; in perf's time order ([`outcrop_perf::Ordered`]) it is in.
#[test]
fn events_are_taken_in_time_order_across_rounds() {
    const TIME: u64 = 1 << 2;
    let st = IP | TID | TIME;
    let mut a = attr(st, 0);
    a[40..48].copy_from_slice(&(1u64 << 18).to_le_bytes()); // sample_id_all
    let sample = |ip: u64, time: u64| {
        let mut b = words(&[ip]);
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend(words(&[time]));
        record(9, 2, &b)
    };
    let with_trailer = |rec: Vec<u8>, time: u64| {
        // sample_id trailer: pid, tid, time
        let mut body = rec[8..].to_vec();
        body.extend_from_slice(&7u32.to_le_bytes());
        body.extend_from_slice(&7u32.to_le_bytes());
        body.extend(words(&[time]));
        record(10, 2, &body)
    };
    let round = record(outcrop_perf::FINISHED_ROUND, 0, &[]);
    let recs = vec![
        sample(0x55_0000_1010, 200),
        with_trailer(mmap2(7, 0x55_0000_0000, 0x3000, 0, "/bin/prog"), 100),
        round.clone(),
        sample(0x55_0000_1020, 300),
        round,
    ];
    let bytes = file(&[(a, vec![])], &recs);
    let len = bytes.len() as u64;
    let mut r = Reader::new(Cursor::new(bytes), len).unwrap();
    let mut order = outcrop_perf::Ordered::new();
    while let Some((at, e)) = r.next_event().unwrap() {
        order.push(at, r.last_time(), e);
    }
    order.finish();
    let mut imp = Importer::new(target(), &r.build_ids);
    let hits: Vec<_> = std::iter::from_fn(|| order.pop())
        .filter_map(|(_, e)| imp.event(&e))
        .collect();
    assert_eq!(hits, vec![(0x1010, None), (0x1020, None)]);
}
