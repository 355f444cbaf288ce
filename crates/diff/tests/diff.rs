//! `outcrop-diff` against hand-made profiles: A + diff = B on every row, columns that sum to
//! the runs' totals, the matching rules, and the errors.

use outcrop_diff::input::{FunctionView, LineView, NodeView, ProfileView, StreamView};
use outcrop_diff::paths::{diff_paths, PathIn};
use outcrop_diff::profile::{diff_profiles, Options, OTHER_FUNCTIONS};
use outcrop_diff::ranges::{diff_ranges, Range, Status};
use outcrop_diff::{compare, CompareOptions, Error, Inputs, Matching, Presence, RapView, Weight};
use outcrop_profile::Counts;
use proptest::prelude::*;

fn counts(i: u64, c: u64) -> Counts {
    Counts {
        instructions: i,
        cycles: c,
        mispredicts: i / 7,
        l1i_misses: i / 11,
        l1d_misses: i / 13,
        l2_misses: i / 17,
    }
}

/// A profile from call chains (`["main", "f"]` → weight): the tree, functions and lines are
/// all derived from the chains, so they are consistent as the profiler's would be.
fn profile(id: Option<&str>, timed: bool, chains: &[(&[&str], u64)]) -> ProfileView {
    let mut tree = vec![NodeView {
        parent: 0,
        function: None,
        self_counts: Counts::default(),
        total: Counts::default(),
        thread: 0,
    }];
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    for (chain, w) in chains {
        let mut parent = 0usize;
        for depth in 1..=chain.len() {
            let p: Vec<String> = chain[..depth].iter().map(|s| s.to_string()).collect();
            let at = match paths.iter().position(|x| *x == p) {
                Some(i) => i,
                None => {
                    tree.push(NodeView {
                        parent: parent as u32,
                        function: Some(p[depth - 1].clone()),
                        self_counts: Counts::default(),
                        total: Counts::default(),
                        thread: 0,
                    });
                    paths.push(p);
                    tree.len() - 1
                }
            };
            parent = at;
        }
        let c = counts(*w, if timed { 2 * w + 1 } else { 0 });
        tree[parent].self_counts.add(&c);
        // totals up the chain
        let mut n = parent;
        loop {
            tree[n].total.add(&c);
            if n == 0 {
                break;
            }
            n = tree[n].parent as usize;
        }
    }
    let mut names: Vec<String> = tree.iter().filter_map(|n| n.function.clone()).collect();
    names.sort();
    names.dedup();
    let functions: Vec<FunctionView> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut s = Counts::default();
            for n in tree.iter().filter(|n| n.function.as_deref() == Some(name)) {
                s.add(&n.self_counts);
            }
            FunctionView {
                name: name.clone(),
                mangled: None,
                start: 0x1000 * (i as u64 + 1),
                self_counts: s,
                total: s,
                calls: 1,
            }
        })
        .collect();
    let lines = functions
        .iter()
        .map(|f| LineView {
            file: "p.c".into(),
            line: 10 + f.name.len() as u32,
            function: f.name.clone(),
            self_counts: f.self_counts,
        })
        .collect();
    let total = tree[0].total;
    ProfileView {
        program: "p".into(),
        program_id: id.map(str::to_string),
        instructions: total.instructions,
        cycles: timed.then_some(total.cycles),
        functions,
        lines: Some(lines),
        lines_unattributed: Some(Counts::default()),
        tree,
        folded_calls: 0,
        threads: vec![],
    }
}

fn add(a: &Counts, d: &outcrop_diff::Delta) -> Counts {
    let f = |x: u64, y: i64| (x as i128 + y as i128) as u64;
    Counts {
        instructions: f(a.instructions, d.instructions),
        cycles: f(a.cycles, d.cycles),
        mispredicts: f(a.mispredicts, d.mispredicts),
        l1i_misses: f(a.l1i_misses, d.l1i_misses),
        l1d_misses: f(a.l1d_misses, d.l1d_misses),
        l2_misses: f(a.l2_misses, d.l2_misses),
    }
}

fn sum<'a>(it: impl Iterator<Item = &'a Counts>) -> Counts {
    let mut s = Counts::default();
    for c in it {
        s.add(c);
    }
    s
}

const NAMES: &[&str] = &["main", "parse", "eval", "hash", "cmp", "sort"];

fn chains() -> impl Strategy<Value = Vec<(Vec<&'static str>, u64)>> {
    prop::collection::vec(
        (
            prop::collection::vec(prop::sample::select(NAMES), 1..5),
            1u64..1_000_000,
        ),
        1..12,
    )
}

proptest! {
    /// On every row of every table A + diff = B, and each side's column sums to its run.
    #[test]
    fn a_plus_diff_is_b_and_columns_sum_to_the_runs(
        ca in chains(), cb in chains(), timed_a: bool, timed_b: bool, same: bool,
    ) {
        let ra: Vec<(&[&str], u64)> = ca.iter().map(|(c, w)| (c.as_slice(), *w)).collect();
        let rb: Vec<(&[&str], u64)> = cb.iter().map(|(c, w)| (c.as_slice(), *w)).collect();
        let a = profile(Some("build-id:aa"), timed_a, &ra);
        let b = profile(Some(if same { "build-id:aa" } else { "build-id:bb" }), timed_b, &rb);
        let d = diff_profiles(&a, &b, Options { force: true, by_symbol: false }).unwrap();
        prop_assert_eq!(d.matching, if same { Matching::Address } else { Matching::Symbol });
        prop_assert_eq!(d.weight, if timed_a && timed_b { Weight::Cycles } else { Weight::Instructions });
        for f in &d.functions {
            prop_assert_eq!(add(&f.a.self_counts, &f.delta.self_counts), f.b.self_counts);
            prop_assert_eq!(add(&f.a.total, &f.delta.total), f.b.total);
            prop_assert_eq!(f.presence == Presence::OnlyA, f.b.start.is_none());
        }
        prop_assert_eq!(sum(d.functions.iter().map(|f| &f.a.self_counts)), a.totals());
        prop_assert_eq!(sum(d.functions.iter().map(|f| &f.b.self_counts)), b.totals());
        let lines = d.lines.as_ref().unwrap();
        for l in lines {
            prop_assert_eq!(add(&l.a, &l.delta), l.b);
        }
        prop_assert_eq!(sum(lines.iter().map(|l| &l.a)), a.totals());
        prop_assert_eq!(sum(lines.iter().map(|l| &l.b)), b.totals());
        for c in &d.call_paths {
            prop_assert_eq!(add(&c.a, &c.delta), c.b);
        }
        prop_assert_eq!(sum(d.call_paths.iter().map(|c| &c.a)), a.totals());
        prop_assert_eq!(sum(d.call_paths.iter().map(|c| &c.b)), b.totals());
        prop_assert_eq!(add(&d.totals.0, &d.totals.2), d.totals.1);
        // sorted by absolute change of the weight
        let key = |x: &outcrop_diff::Delta| x.of(d.weight).unsigned_abs();
        prop_assert!(d.functions.windows(2).all(|w| key(&w[0].delta.self_counts) >= key(&w[1].delta.self_counts)));
        // the flame graph is B's tree, widths of B
        prop_assert_eq!(d.flame.len(), b.tree.len());
        prop_assert_eq!(d.flame[0].b_total, d.weight.of(&b.totals()));
        prop_assert_eq!(d.flame[0].a_total, d.weight.of(&a.totals()));
    }
}

#[test]
fn the_same_code_is_matched_by_address_and_other_builds_by_name() {
    let mut a = profile(Some("build-id:aa"), false, &[(&["main", "f"], 10)]);
    let mut b = a.clone();
    // B's f is at another address: the same code cannot move, so it is another function
    let fi = b.functions.iter().position(|f| f.name == "f").unwrap();
    b.functions[fi].start += 0x40;
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    assert_eq!(d.matching, Matching::Address);
    let f: Vec<_> = d.functions.iter().filter(|r| r.function == "f").collect();
    assert_eq!(f.len(), 2);
    assert!(f.iter().any(|r| r.presence == Presence::OnlyA));
    assert!(f.iter().any(|r| r.presence == Presence::OnlyB));
    // different builds: by name
    b.program_id = Some("build-id:bb".into());
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    assert_eq!(d.matching, Matching::Symbol);
    assert!(d.functions.iter().all(|r| r.presence == Presence::Both));
    assert!(d
        .functions
        .iter()
        .all(|r| r.delta.self_counts.instructions == 0));
    // two functions of one name in a build (static functions of two files)
    a.functions.push(FunctionView {
        start: 0x9000,
        ..a.functions[fi].clone()
    });
    a.functions[2].self_counts = Counts::default();
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    assert!(d
        .functions
        .iter()
        .any(|r| r.function == "f (2)" && r.presence == Presence::OnlyA));
}

#[test]
fn a_call_inlined_in_one_build_still_matches() {
    // A calls main > helper > leaf; B inlined helper into main
    let a = profile(
        Some("build-id:aa"),
        false,
        &[(&["main", "helper", "leaf"], 100), (&["main"], 5)],
    );
    let b = profile(
        Some("build-id:bb"),
        false,
        &[(&["main", "leaf"], 80), (&["main"], 5)],
    );
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    let leaf = d
        .call_paths
        .iter()
        .find(|c| c.path == ["main", "leaf"])
        .unwrap();
    assert_eq!(leaf.presence, Presence::Both);
    assert_eq!((leaf.a.instructions, leaf.b.instructions), (100, 80));
    assert_eq!(d.unmatched.only_a, 1);
    assert!(d.notes.iter().any(|n| n.contains("inlined")));
}

#[test]
fn different_programs_are_refused_unless_forced() {
    let a = profile(Some("build-id:aa"), false, &[(&["main", "gzip"], 100)]);
    let b = profile(Some("build-id:bb"), false, &[(&["_start", "sqlite"], 100)]);
    let e = diff_profiles(&a, &b, Options::default()).unwrap_err();
    assert!(matches!(e, Error::NotComparable(_)));
    assert!(
        e.to_string().contains("look like different programs"),
        "{e}"
    );
    assert!(e.to_string().contains("--force"), "{e}");
    let d = diff_profiles(
        &a,
        &b,
        Options {
            force: true,
            by_symbol: false,
        },
    )
    .unwrap();
    assert_eq!(d.unmatched.only_a, 2);
    assert_eq!(d.unmatched.only_b, 2);
}

#[test]
fn an_older_profile_listing_the_hottest_functions_gets_an_other_row() {
    let a = profile(None, false, &[(&["main", "f"], 10), (&["main", "g"], 3)]);
    let mut b = a.clone();
    b.functions.retain(|f| f.name != "g");
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    let other = d
        .functions
        .iter()
        .find(|f| f.function == OTHER_FUNCTIONS)
        .unwrap();
    assert_eq!(other.b.self_counts.instructions, 3);
    assert_eq!(
        sum(d.functions.iter().map(|f| &f.b.self_counts)),
        b.totals()
    );
    assert!(d.notes.iter().any(|n| n.contains("without a program id")));
}

#[test]
fn one_timed_run_compares_instructions_and_says_so() {
    let a = profile(None, true, &[(&["main"], 10)]);
    let b = profile(None, false, &[(&["main"], 12)]);
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    assert_eq!(d.weight, Weight::Instructions);
    assert!(d.notes.iter().any(|n| n.contains("only A was timed")));
}

#[test]
fn bad_profile_json_is_named() {
    let e = ProfileView::from_json(br#"{"program":"p","instructions":1,"functions":[],"tree":[{"parent":0,"function":null,"self":{},"total":{}},{"parent":1,"function":"f","self":{},"total":{}}]}"#).unwrap_err();
    assert!(e.to_string().contains("node 1 names parent 1"), "{e}");
    let e = ProfileView::from_json(b"{\"program\": 3}").unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");
    let e = ProfileView::from_json(br#"{"profile": null, "rap": null}"#).unwrap_err();
    assert!(e.to_string().contains("no profile"), "{e}");
    let e = ProfileView::from_json(br#"{"program":"p","instructions":1,"functions":[],"tree":[]}"#)
        .unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
}

/// Counts no run can have are refused, so B − A is exact (it once printed a saturated
/// difference for a self count of 2^64−1, and A + diff ≠ B).
#[test]
fn counts_past_what_a_run_counts_are_refused() {
    let f = |self_i: &str, other: &str| {
        format!(
            r#"{{"program":"p","instructions":10,"functions":[{{"name":"f","self":{{"instructions":{self_i}}},"total":{{}}}},{{"name":"g","self":{{"instructions":{other}}},"total":{{}}}}],"tree":[{{"parent":0,"function":null,"self":{{}},"total":{{}}}}]}}"#
        )
    };
    let ok = ProfileView::from_json(f("5", "5").as_bytes());
    assert!(ok.is_ok(), "{ok:?}");
    let e = ProfileView::from_json(f("18446744073709551615", "1").as_bytes()).unwrap_err();
    assert!(e.to_string().contains("2^63"), "{e}");
    // each below 2^63, their sum past it
    let half = (1u64 << 62).to_string();
    let e = ProfileView::from_json(f(&half, &(3u64 << 61).to_string()).as_bytes()).unwrap_err();
    assert!(e.to_string().contains("add up"), "{e}");
    let e = ProfileView::from_json(
        br#"{"program":"p","instructions":18446744073709551615,"functions":[],"tree":[{"parent":0,"function":null,"self":{},"total":{}}]}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`instructions`"), "{e}");
}

fn range(lo: u64, hi: u64, share: f64, code: Option<&str>) -> Range {
    Range {
        lo,
        hi,
        depth: 1,
        share,
        exclusive_share: share,
        code: code.map(str::to_string),
    }
}

fn rap(ranges: Vec<Range>) -> RapView {
    RapView {
        streams: vec![StreamView {
            stream: "pc".into(),
            thread: None,
            n: 100,
            hot: ranges,
        }],
    }
}

#[test]
fn hot_ranges_kept_moved_appeared_vanished() {
    let a = rap(vec![
        range(0x1000, 0x1fff, 0.5, None),
        range(0x4000, 0x40ff, 0.2, None),
        range(0x9000, 0x9fff, 0.1, None),
    ]);
    let b = rap(vec![
        range(0x1000, 0x1fff, 0.4, None),
        range(0x4080, 0x41ff, 0.25, None),
        range(0x20000, 0x20fff, 0.3, None),
    ]);
    let d = diff_ranges(&a, &b, true);
    let rows = &d.streams[0].rows;
    let st = |lo: u64| {
        rows.iter()
            .find(|r| r.b.as_ref().or(r.a.as_ref()).unwrap().lo == lo)
            .unwrap()
            .status
    };
    assert_eq!(st(0x1000), Status::Kept);
    assert_eq!(st(0x4080), Status::Moved);
    assert_eq!(st(0x20000), Status::Appeared);
    assert_eq!(st(0x9000), Status::Vanished);
    // sorted by absolute change of share
    assert!(rows
        .windows(2)
        .all(|w| w[0].share_delta.abs() >= w[1].share_delta.abs()));
    let total: f64 = rows.iter().map(|r| r.share_delta).sum();
    let expect: f64 = (0.4 + 0.25 + 0.3) - (0.5 + 0.2 + 0.1);
    assert!((total - expect).abs() < 1e-12);
}

#[test]
fn code_ranges_of_different_builds_match_by_what_ran_there() {
    let a = rap(vec![
        range(
            0x10000,
            0x1ffff,
            0.7,
            Some("interp 65%, call 15%, index 6% (+20 functions)"),
        ),
        range(
            0x20000,
            0x2ffff,
            0.18,
            Some("geti 24%, compare 20%, seti 12% (+117 functions)"),
        ),
        range(0x30000, 0x30fff, 0.05, Some("gc 90%")),
    ]);
    let b = rap(vec![
        range(
            0x24000,
            0x27fff,
            0.12,
            Some("geti 38%, compare 37%, sort 21% (+24 functions)"),
        ),
        range(
            0x10000,
            0x1ffff,
            0.71,
            Some("interp 68%, call 17%, strcmp 4% (+135 functions)"),
        ),
        range(0x50000, 0x50fff, 0.05, Some("printf 80%")),
    ]);
    let d = diff_ranges(&a, &b, false);
    let rows = &d.streams[0].rows;
    let by_b = |lo: u64| {
        rows.iter()
            .find(|r| r.b.as_ref().is_some_and(|x| x.lo == lo))
            .unwrap()
    };
    assert_eq!(by_b(0x24000).status, Status::Kept);
    assert_eq!(by_b(0x24000).a.as_ref().unwrap().lo, 0x20000);
    assert_eq!(by_b(0x10000).a.as_ref().unwrap().lo, 0x10000);
    assert_eq!(by_b(0x50000).status, Status::Appeared);
    assert!(rows
        .iter()
        .any(|r| r.status == Status::Vanished && r.a.as_ref().unwrap().lo == 0x30000));
    assert!(
        range(0, 1, 0.1, Some("a 50%, b 50%")).similarity(&range(0, 1, 0.1, Some("c 100%"))) == 0.0
    );
}

fn path(f: &str, blocks: &[&str], share: f64) -> PathIn {
    PathIn {
        function: f.into(),
        blocks: blocks.iter().map(|s| s.to_string()).collect(),
        share,
    }
}

#[test]
fn hot_paths_gained_lost_kept_and_by_function() {
    let a = vec![
        path("f", &["f+0x0", "f+0x10"], 0.6),
        path("g", &["g+0x0"], 0.3),
        path("h", &["h+0x0"], 0.1),
    ];
    let b = vec![
        path("f", &["f+0x0", "f+0x10"], 0.5),
        path("g", &["g+0x4"], 0.45),
        path("h", &["h+0x0"], 0.005),
    ];
    let d = diff_paths(&a, &b, 0.01);
    assert_eq!(d.kept.len(), 1);
    assert_eq!(d.gained.len(), 1);
    assert_eq!(d.gained[0].blocks, ["g+0x4"]);
    assert_eq!(d.lost.len(), 2, "{:?}", d.lost);
    assert_eq!(d.lost[0].blocks, ["g+0x0"]);
    assert_eq!(d.lost[1].blocks, ["h+0x0"]);
    assert!((d.lost[1].b_share - 0.005).abs() < 1e-12);
    let g = d.by_function.iter().find(|x| x.function == "g").unwrap();
    assert!((g.a_share - 0.3).abs() < 1e-12 && (g.b_share - 0.45).abs() < 1e-12);
}

#[test]
fn compare_says_what_each_side_lacks() {
    let p = profile(Some("build-id:aa"), false, &[(&["main"], 10)]);
    let a = Inputs {
        label: "A".into(),
        profile: Some(p.clone()),
        ..Inputs::default()
    };
    let b = Inputs {
        label: "B".into(),
        profile: Some(p),
        rap: Some(rap(vec![])),
        ..Inputs::default()
    };
    let d = compare(&a, &b, CompareOptions::default()).unwrap();
    assert!(d
        .notes
        .iter()
        .any(|n| n.starts_with("rap: only B has it") && n.contains("--rap")));
    assert!(d.ranges.is_none());
    let c = Inputs {
        label: "C".into(),
        paths: Some(vec![]),
        ..Inputs::default()
    };
    let e = compare(&a, &c, CompareOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("share no mechanism: A has profile, B has paths"),
        "{e}"
    );
}

#[test]
fn compiler_clones_count_with_their_origin_across_builds() {
    use outcrop_diff::profile::base_name;
    assert_eq!(
        base_name("sqlite3BtreeNext.constprop.0"),
        "sqlite3BtreeNext"
    );
    assert_eq!(base_name("f.isra.0.part.1"), "f");
    assert_eq!(base_name("f.cold"), "f");
    assert_eq!(base_name("f.lto_priv.12"), "f");
    assert_eq!(base_name("f.2"), "f.2");
    assert_eq!(base_name(".part.0"), ".part.0");
    assert_eq!(base_name("a.b"), "a.b");
    let a = profile(Some("build-id:aa"), false, &[(&["main", "next"], 100)]);
    let b = profile(
        Some("build-id:bb"),
        false,
        &[(&["main", "next.constprop.0"], 90), (&["main", "next"], 5)],
    );
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    let next = d.functions.iter().find(|f| f.function == "next").unwrap();
    assert_eq!(next.presence, Presence::Both);
    assert_eq!(
        (
            next.a.self_counts.instructions,
            next.b.self_counts.instructions
        ),
        (100, 95)
    );
    assert_eq!(next.symbols, ["next.constprop.0"]);
    let path = d
        .call_paths
        .iter()
        .find(|c| c.path == ["main", "next"])
        .unwrap();
    assert_eq!(path.b.instructions, 95);
    // the same code keeps every symbol apart
    let d = diff_profiles(&b, &b, Options::default()).unwrap();
    assert!(d.functions.iter().any(|f| f.function == "next.constprop.0"));
}

#[test]
fn hostile_profiles_are_bounded() {
    // a chain deeper than any profile Outcrop writes is refused by name
    let mut tree = String::from(r#"{"parent":0,"function":null,"self":{},"total":{}}"#);
    for i in 1..=(outcrop_diff::profile::MAX_TREE_DEPTH + 1) {
        tree += &format!(
            r#",{{"parent":{},"function":"f","self":{{}},"total":{{}}}}"#,
            i - 1
        );
    }
    let json = format!(r#"{{"program":"p","instructions":0,"functions":[],"tree":[{tree}]}}"#);
    let e = ProfileView::from_json(json.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("calls deep"), "{e}");
    // counts at u64::MAX saturate instead of overflowing
    let mut a = profile(None, true, &[(&["main", "f"], 10), (&["main", "g"], 10)]);
    for n in &mut a.tree {
        n.self_counts.cycles = u64::MAX;
    }
    let d = diff_profiles(&a, &a, Options::default()).unwrap();
    assert_eq!(d.totals.0.cycles, u64::MAX);
}

#[test]
fn call_paths_past_the_limit_are_summed_in_one_row() {
    use outcrop_diff::profile::MAX_CALL_PATH_ROWS;
    let names: Vec<String> = (0..MAX_CALL_PATH_ROWS + 7)
        .map(|i| format!("f{i}"))
        .collect();
    let chains: Vec<(Vec<&str>, u64)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (vec!["main", n.as_str()], 1 + i as u64))
        .collect();
    let refs: Vec<(&[&str], u64)> = chains.iter().map(|(c, w)| (c.as_slice(), *w)).collect();
    let a = profile(Some("build-id:aa"), false, &refs);
    let b = profile(Some("build-id:aa"), false, &refs[1..]);
    let d = diff_profiles(&a, &b, Options::default()).unwrap();
    assert_eq!(d.call_paths.len(), MAX_CALL_PATH_ROWS + 1);
    let other = d.call_paths.last().unwrap();
    assert!(
        other.path[0].starts_with("(other call paths: "),
        "{:?}",
        other.path
    );
    assert_eq!(sum(d.call_paths.iter().map(|c| &c.a)), a.totals());
    assert_eq!(sum(d.call_paths.iter().map(|c| &c.b)), b.totals());
}
