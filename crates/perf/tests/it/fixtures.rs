//! The reader against known answers: google/autofdo's `sample_reader_test.cc` golden values
//! on `test.lbr`, the propeller fixture's sample and branch counts, and `perf script` on the
//! same files (when linux-perf is installed; `OUTCROP_REQUIRE_PERF=1` makes it required).

use outcrop_perf::{parse_line, Event, Reader, Sample};
use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn events(name: &str) -> (Reader<Cursor<Vec<u8>>>, Vec<Event>) {
    let bytes = fixture(name);
    let len = bytes.len() as u64;
    let mut r = Reader::new(Cursor::new(bytes), len).unwrap();
    let mut out = Vec::new();
    while let Some((_, e)) = r.next_event().unwrap() {
        out.push(e);
    }
    (r, out)
}

/// quipper's `dso_and_offset` for one process: the mapping holding the address (the
/// process's own, then the kernel's), as (path, file offset).
fn dso_offset(
    maps: &BTreeMap<u32, Vec<outcrop_perf::Mmap>>,
    pid: u32,
    a: u64,
) -> Option<(&str, u64)> {
    for p in [pid, u32::MAX] {
        if let Some(ms) = maps.get(&p) {
            if let Some(m) = ms
                .iter()
                .rev()
                .find(|m| a >= m.start && a - m.start < m.len)
            {
                return Some((m.path.as_str(), (a - m.start).wrapping_add(m.pgoff)));
            }
        }
    }
    None
}

#[test]
fn autofdo_golden_values_on_test_lbr() {
    let (_, evs) = events("test.lbr");
    let mut maps: BTreeMap<u32, Vec<outcrop_perf::Mmap>> = BTreeMap::new();
    let mut address: BTreeMap<u64, u64> = BTreeMap::new();
    let mut ranges: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut samples = 0;
    let is_bin = |d: Option<(&str, u64)>| d.is_some_and(|(p, _)| p.ends_with("test.binary"));
    for e in &evs {
        match e {
            Event::Mmap(m) => maps.entry(m.pid).or_default().push(m.clone()),
            Event::Sample(s) => {
                samples += 1;
                assert_eq!(s.branches.len(), 16, "every sample has 16 LBR entries");
                let ip = dso_offset(&maps, s.pid, s.ip.unwrap());
                if is_bin(ip) {
                    *address.entry(ip.unwrap().1).or_default() += 1;
                }
                // sample_reader.cc: ranges between consecutive entries, newest first
                let b = &s.branches;
                for i in 1..b.len() {
                    let to = dso_offset(&maps, s.pid, b[i].to);
                    if !is_bin(to) {
                        continue;
                    }
                    let f0 = dso_offset(&maps, s.pid, b[0].from).map(|d| d.1);
                    let t0 = dso_offset(&maps, s.pid, b[0].to).map(|d| d.1);
                    let f1 = dso_offset(&maps, s.pid, b[1].from).map(|d| d.1);
                    let t1 = dso_offset(&maps, s.pid, b[1].to).map(|d| d.1);
                    if i == 1
                        && f0 == f1
                        && t0 == t1
                        && f0.unwrap_or(0).wrapping_sub(t0.unwrap_or(0)) > 0x50
                    {
                        continue;
                    }
                    let begin = to.unwrap().1;
                    let Some((_, end)) = dso_offset(&maps, s.pid, b[i - 1].from) else {
                        continue;
                    };
                    if end < begin || end - begin > 1 << 20 {
                        continue;
                    }
                    *ranges.entry((begin, end)).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(samples, 9232);
    assert_eq!(address.get(&0xfe0), Some(&55));
    assert_eq!(address.get(&0x1005), Some(&18));
    assert_eq!(ranges.values().sum::<u64>(), 134_622);
    assert_eq!(ranges.len(), 357);
    assert_eq!(ranges.get(&(0x4e80, 0x4e8e)), Some(&1134));
    let total: u64 = ranges.iter().map(|((b, e), c)| c * (1 + e - b)).sum();
    assert_eq!(total, 5_383_657);
}

#[test]
fn propeller_fixture_counts() {
    let (r, evs) = events("propeller_sample_1.perfdata1");
    let samples: Vec<&Sample> = evs
        .iter()
        .filter_map(|e| match e {
            Event::Sample(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(samples.len(), 3740);
    assert_eq!(
        samples.iter().map(|s| s.branches.len()).sum::<usize>(),
        119_424
    );
    assert!(samples.iter().all(|s| s.branches.len() <= 32));
    assert_eq!(r.attrs.len(), 1);
    assert!(r.attrs[0].has_branch_stack());
    let mmaps = evs
        .iter()
        .filter(|e| matches!(e, Event::Mmap(m) if m.path.ends_with("propeller_sample_1.bin.gen")))
        .count();
    assert!(mmaps >= 1);
}

/// Samples from `perf script -F pid,tid,ip,brstack` of the same file, through the text reader.
fn perf_script(name: &str) -> Option<Vec<Sample>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let out = std::process::Command::new("perf")
        .args(["script", "-F", "pid,tid,ip,brstack", "-i"])
        .arg(&p)
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        _ => {
            assert!(
                std::env::var_os("OUTCROP_REQUIRE_PERF").is_none(),
                "perf is required (OUTCROP_REQUIRE_PERF) but `perf script` did not run"
            );
            eprintln!("skipped: perf is not installed");
            return None;
        }
    };
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .enumerate()
            .filter_map(|(i, l)| parse_line(l, i as u64 + 1).unwrap())
            .collect(),
    )
}

#[test]
fn matches_perf_script_on_both_fixtures() {
    for name in ["test.lbr", "propeller_sample_1.perfdata1"] {
        let Some(theirs) = perf_script(name) else {
            return;
        };
        let (_, evs) = events(name);
        let ours: Vec<&Sample> = evs
            .iter()
            .filter_map(|e| match e {
                Event::Sample(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{name}: samples");
        // perf script orders samples by time across CPUs; the reader keeps file order
        let key = |s: &Sample| {
            let b: Vec<_> = s
                .branches
                .iter()
                .map(|x| (x.from, x.to, x.mispred, x.predicted, x.cycles))
                .collect();
            (s.pid, s.tid, s.ip, b)
        };
        let mut a: Vec<_> = ours.iter().map(|s| key(s)).collect();
        let mut b: Vec<_> = theirs.iter().map(key).collect();
        a.sort();
        b.sort();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{name}: sample {i} in sorted order");
        }
    }
}
