//! Phase clustering in the SimPoint 3.0 style: normalized basic-block vectors, randomly
//! projected, clustered by k-means for every k up to a limit, the k chosen by BIC.

use crate::Bbv;
use outcrop_sampling::rng::SplitMix64;
use serde::Serialize;

/// How [`cluster`] works; the defaults are SimPoint 3.0's where it has one.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ClusterOptions {
    /// Most phases tried (SimPoint's `-maxK`).
    pub max_k: usize,
    /// Dimensions of the random projection (SimPoint: 15).
    pub dims: usize,
    /// k-means runs from different random starts per k; the one with the least distortion is
    /// kept (SimPoint's `-numInitSeeds`, default 5).
    pub starts: usize,
    /// Most k-means iterations per run (SimPoint's `-iters`, 100).
    pub iterations: usize,
    /// The smallest k whose BIC reaches this fraction of the range of BIC scores is chosen
    /// (SimPoint's `-bicThreshold`, 0.9).
    pub bic_threshold: f64,
    /// Seed of the projection and the starts.
    pub seed: u64,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            max_k: 10,
            dims: 15,
            starts: 5,
            iterations: 100,
            bic_threshold: 0.9,
            seed: 493_575_226,
        }
    }
}

/// One phase.
#[derive(Clone, Debug, Serialize)]
pub struct Phase {
    /// Its number: phases are numbered by where they first occur in the run, from 0.
    pub id: usize,
    /// Its intervals (indexes into [`Bbv::intervals`]), in run order.
    pub intervals: Vec<usize>,
    /// Its share of the run's instructions (0–1).
    pub weight: f64,
    /// The interval closest to the phase's centroid: the one to simulate in detail.
    pub representative: usize,
}

/// The phases of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Phases {
    /// The options used.
    pub options: ClusterOptions,
    /// Phases chosen.
    pub k: usize,
    /// `(k, BIC score)` for every k tried.
    pub bic: Vec<(usize, f64)>,
    /// Each interval's phase.
    pub assignment: Vec<usize>,
    /// The phases, by id.
    pub phases: Vec<Phase>,
}

/// The smallest variance [`bic`] assumes (squared distance in the projected space).
pub const MIN_VARIANCE: f64 = 1e-3;

/// A value in [-1, 1] for dimension `d` of block `b`, fixed by `seed`.
fn projection(seed: u64, b: u32, d: usize) -> f64 {
    let mut r = SplitMix64::new(seed ^ (u64::from(b) << 20) ^ d as u64);
    let x = r.next_u64() >> 11; // 53 bits
    2.0 * (x as f64 / (1u64 << 53) as f64) - 1.0
}

/// The vectors normalized (each sums to 1) and projected to `dims` dimensions.
fn project(bbv: &Bbv, dims: usize, seed: u64) -> Vec<Vec<f64>> {
    // a block's projection row is computed once
    let mut rows: Vec<Option<Vec<f64>>> = vec![None; bbv.blocks.len()];
    bbv.intervals
        .iter()
        .map(|i| {
            let mut v = vec![0.0; dims];
            let n = i.instructions.max(1) as f64;
            for &(b, c) in &i.counts {
                let row = rows.get_mut(b as usize).map(|r| {
                    r.get_or_insert_with(|| (0..dims).map(|d| projection(seed, b, d)).collect())
                });
                if let Some(row) = row {
                    let f = c as f64 / n;
                    for (x, r) in v.iter_mut().zip(row.iter()) {
                        *x += f * r;
                    }
                }
            }
            v
        })
        .collect()
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// One k-means run: centroids from `k` distinct random points, Lloyd's iterations until no
/// point moves. Returns (assignment, centroids, distortion).
fn kmeans(
    points: &[Vec<f64>],
    k: usize,
    rng: &mut SplitMix64,
    iterations: usize,
) -> (Vec<usize>, Vec<Vec<f64>>, f64) {
    let n = points.len();
    let mut chosen: Vec<usize> = Vec::with_capacity(k);
    while chosen.len() < k.min(n) {
        let c = (rng.next_u64() % n as u64) as usize;
        if !chosen.contains(&c) {
            chosen.push(c);
        }
    }
    let mut centroids: Vec<Vec<f64>> = chosen.iter().map(|&c| points[c].clone()).collect();
    let mut assign = vec![usize::MAX; n];
    for _ in 0..iterations.max(1) {
        let mut moved = false;
        for (i, p) in points.iter().enumerate() {
            let best = (0..centroids.len())
                .min_by(|&a, &b| {
                    dist2(p, &centroids[a])
                        .total_cmp(&dist2(p, &centroids[b]))
                        .then(a.cmp(&b))
                })
                .unwrap_or(0);
            if assign[i] != best {
                assign[i] = best;
                moved = true;
            }
        }
        // new centroids; an empty cluster takes the point farthest from its own centroid
        let dims = points.first().map_or(0, Vec::len);
        let mut sums = vec![vec![0.0; dims]; centroids.len()];
        let mut sizes = vec![0usize; centroids.len()];
        for (p, &a) in points.iter().zip(&assign) {
            sizes[a] += 1;
            for (s, x) in sums[a].iter_mut().zip(p) {
                *s += x;
            }
        }
        for c in 0..centroids.len() {
            if sizes[c] > 0 {
                centroids[c] = sums[c].iter().map(|s| s / sizes[c] as f64).collect();
            } else if let Some(far) = (0..n).max_by(|&a, &b| {
                dist2(&points[a], &centroids[assign[a]])
                    .total_cmp(&dist2(&points[b], &centroids[assign[b]]))
                    .then(b.cmp(&a))
            }) {
                centroids[c] = points[far].clone();
                assign[far] = c;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let distortion = points
        .iter()
        .zip(&assign)
        .map(|(p, &a)| dist2(p, &centroids[a]))
        .sum();
    (assign, centroids, distortion)
}

/// The BIC score of a clustering (Pelleg and Moore's X-means formula, as SimPoint uses it):
/// the log-likelihood of the points under spherical Gaussians with one variance, less
/// half the number of parameters times log R.
fn bic(points: &[Vec<f64>], assign: &[usize], centroids: &[Vec<f64>]) -> f64 {
    let r = points.len() as f64;
    let k = centroids.len() as f64;
    let m = points.first().map_or(1, Vec::len) as f64;
    let sse: f64 = points
        .iter()
        .zip(assign)
        .map(|(p, &a)| dist2(p, &centroids[a]))
        .sum();
    // a floor on the variance: intervals about 0.03 apart (a few percent of their block
    // distribution) are the same behaviour, not k phases fitting noise (or the aliasing of a
    // loop against the interval length) exactly
    let variance = if r > k {
        (sse / (r - k)).max(MIN_VARIANCE)
    } else {
        MIN_VARIANCE
    };
    let mut sizes = vec![0f64; centroids.len()];
    for &a in assign {
        sizes[a] += 1.0;
    }
    let two_pi = 2.0 * std::f64::consts::PI;
    let l: f64 = sizes
        .iter()
        .filter(|&&rn| rn > 0.0)
        .map(|&rn| {
            -rn / 2.0 * two_pi.ln() - rn * m / 2.0 * variance.ln() - (rn - k) / 2.0 + rn * rn.ln()
                - rn * r.ln()
        })
        .sum();
    let params = (k - 1.0) + m * k + 1.0;
    l - params / 2.0 * r.ln()
}

/// The phases of `bbv` (see the crate docs). An empty `bbv` has none.
pub fn cluster(bbv: &Bbv, o: &ClusterOptions) -> Phases {
    let points = project(bbv, o.dims.max(1), o.seed);
    let n = points.len();
    if n == 0 {
        return Phases {
            options: *o,
            k: 0,
            bic: Vec::new(),
            assignment: Vec::new(),
            phases: Vec::new(),
        };
    }
    let mut rng = SplitMix64::new(o.seed);
    let mut runs = Vec::new();
    for k in 1..=o.max_k.max(1).min(n) {
        let best = (0..o.starts.max(1))
            .map(|_| kmeans(&points, k, &mut rng, o.iterations))
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(assign, centroids, _)| (assign, centroids));
        if let Some((assign, centroids)) = best {
            let score = bic(&points, &assign, &centroids);
            runs.push((k, score, assign, centroids));
        }
    }
    let lo = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let hi = runs.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    let cut = lo + o.bic_threshold * (hi - lo);
    let pick = runs.iter().position(|r| r.1 >= cut).unwrap_or(0);
    let bic_scores = runs.iter().map(|r| (r.0, r.1)).collect();
    let (_, _, assign, centroids) = runs.swap_remove(pick);
    // renumber by first occurrence
    let mut label = vec![usize::MAX; centroids.len()];
    let mut next = 0;
    for &a in &assign {
        if label[a] == usize::MAX {
            label[a] = next;
            next += 1;
        }
    }
    let total = bbv.instructions().max(1) as f64;
    let mut phases: Vec<Phase> = (0..next)
        .map(|id| Phase {
            id,
            intervals: Vec::new(),
            weight: 0.0,
            representative: 0,
        })
        .collect();
    let mut best: Vec<(f64, usize)> = vec![(f64::INFINITY, 0); next];
    for (i, &a) in assign.iter().enumerate() {
        let id = label[a];
        let ph = &mut phases[id];
        ph.intervals.push(i);
        ph.weight += bbv.intervals[i].instructions as f64 / total;
        let d = dist2(&points[i], &centroids[a]);
        if d < best[id].0 {
            best[id] = (d, i);
        }
    }
    for (ph, (_, rep)) in phases.iter_mut().zip(best) {
        ph.representative = rep;
    }
    let assignment = assign.iter().map(|&a| label[a]).collect();
    Phases {
        options: *o,
        k: next,
        bic: bic_scores,
        assignment,
        phases,
    }
}
