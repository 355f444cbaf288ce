//! The whole offline pipeline in one call: samples → partial paths → matched and weighted
//! path profile; and the exact profile of a block stream.

use crate::cfg::Cfg;
use crate::estimate::{estimate, Estimate, IndexCache, Weighting};
use crate::exact::{ExactCounter, ExactStats};
use crate::partial::{Options, Reconstruction, Reconstructor};
use crate::regions::{PathKey, Regions};
use outcrop_sampling::Samples;
use rustc_hash::FxHashMap;

/// The result of analyzing one set of samples.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Partial paths, their statistics and the sampled edge profile.
    pub reconstruction: Reconstruction,
    /// The estimated path profile.
    pub estimate: Estimate,
}

/// Reconstructs, matches and weights `samples` (traces in file order, so the result is
/// reproducible).
pub fn analyze(
    cfg: &Cfg,
    regions: &Regions,
    samples: &Samples,
    opts: Options,
    weighting: Weighting,
    cache: &mut IndexCache,
) -> Analysis {
    let mut r = Reconstructor::new(cfg, regions, opts);
    for (t, c) in samples.sorted() {
        r.add(t, c);
    }
    let reconstruction = r.finish();
    let estimate = estimate(
        regions,
        &reconstruction.fragments,
        weighting,
        &reconstruction.edges,
        cache,
    );
    Analysis {
        reconstruction,
        estimate,
    }
}

/// The exact path profile of a stream of dynamic block start addresses.
pub fn exact_profile(
    cfg: &Cfg,
    regions: &Regions,
    starts: impl IntoIterator<Item = u64>,
) -> (FxHashMap<PathKey, u64>, ExactStats) {
    let mut ex = ExactCounter::new(cfg, regions);
    for s in starts {
        ex.push_block(s);
    }
    ex.finish_run()
}
