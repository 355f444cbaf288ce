//! [`CodeLike`]: basic-block addresses of a synthetic program running hot loops.
//!
//! Parameters are documented in the [parent module](super); they are the constants below.

use std::ops::{Range, RangeInclusive};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Geometric, Zipf};
use rand_pcg::Pcg64;

/// Start of the text segment.
const TEXT_BASE: u64 = 0x10000;
/// Number of functions.
const FUNCTIONS: usize = 400;
/// Basic blocks per function.
const BLOCKS_PER_FUNCTION: RangeInclusive<usize> = 4..=60;
/// Instructions per basic block.
const INSTRUCTIONS_PER_BLOCK: RangeInclusive<u64> = 2..=24;
/// Bytes per instruction.
const INSTRUCTION_BYTES: u64 = 4;
/// Function start alignment.
const FUNCTION_ALIGN: u64 = 16;
/// Number of loops.
const LOOPS: usize = 300;
/// Blocks per loop body (clamped to the function's size).
const LOOP_BODY_BLOCKS: RangeInclusive<usize> = 3..=12;
/// Probability that a loop body skips a block between two of its blocks.
const LOOP_SKIP_PROBABILITY: f64 = 0.25;
/// Zipf exponent of loop popularity.
const LOOP_POPULARITY_EXPONENT: f64 = 1.1;
/// Mean number of iterations per loop visit (1 + geometric).
const MEAN_ITERATIONS: f64 = 40.0;
/// Probability of a cold call path before a loop visit.
const COLD_PATH_PROBABILITY: f64 = 0.10;
/// Blocks per cold call path.
const COLD_PATH_BLOCKS: RangeInclusive<usize> = 2..=8;

/// Basic-block start addresses of a synthetic program (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct CodeLike {
    rng: Pcg64,
    /// Start address of every block, function after function.
    blocks: Vec<u64>,
    /// Each function's blocks, as a range of indices into `blocks`.
    functions: Vec<Range<usize>>,
    /// Addresses of every loop body, loop after loop.
    loop_blocks: Vec<u64>,
    /// Each loop's body, as a range of indices into `loop_blocks`.
    loops: Vec<Range<usize>>,
    loop_popularity: Zipf<f64>,
    extra_iterations: Geometric,
    /// Blocks of the cold path still to emit (indices into `blocks`).
    cold: Range<usize>,
    /// The loop body being run, the next position in it and the iterations left after this one.
    body: Range<usize>,
    position: usize,
    iterations_left: u64,
}

impl CodeLike {
    /// The program and execution for `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = Pcg64::seed_from_u64(seed);

        let mut blocks = Vec::new();
        let mut functions = Vec::with_capacity(FUNCTIONS);
        let mut address = TEXT_BASE;
        for _ in 0..FUNCTIONS {
            address = address.next_multiple_of(FUNCTION_ALIGN);
            let first = blocks.len();
            for _ in 0..rng.gen_range(BLOCKS_PER_FUNCTION) {
                blocks.push(address);
                address += rng.gen_range(INSTRUCTIONS_PER_BLOCK) * INSTRUCTION_BYTES;
            }
            functions.push(first..blocks.len());
        }

        let mut loop_blocks = Vec::new();
        let mut loops = Vec::with_capacity(LOOPS);
        for _ in 0..LOOPS {
            let function = functions[rng.gen_range(0..functions.len())].clone();
            let size = function.len();
            let len = rng.gen_range(LOOP_BODY_BLOCKS).min(size);
            let mut index = rng.gen_range(0..=size - len);
            let first = loop_blocks.len();
            loop_blocks.push(blocks[function.start + index]);
            for placed in 1..len {
                let still_needed = len - placed;
                // Skip a block only if enough of the function remains after the skip.
                let slack = size - 1 - index - still_needed;
                index += if slack > 0 && rng.gen_bool(LOOP_SKIP_PROBABILITY) {
                    2
                } else {
                    1
                };
                loop_blocks.push(blocks[function.start + index]);
            }
            loops.push(first..loop_blocks.len());
        }

        let loop_popularity = match Zipf::new(LOOPS as u64, LOOP_POPULARITY_EXPONENT) {
            Ok(zipf) => zipf,
            Err(_) => unreachable!("constant Zipf parameters are valid"),
        };
        let extra_iterations = match Geometric::new(1.0 / MEAN_ITERATIONS) {
            Ok(geometric) => geometric,
            Err(_) => unreachable!("constant geometric parameter is valid"),
        };

        CodeLike {
            rng,
            blocks,
            functions,
            loop_blocks,
            loops,
            loop_popularity,
            extra_iterations,
            cold: 0..0,
            body: 0..0,
            position: 0,
            iterations_left: 0,
        }
    }

    /// Number of distinct basic blocks in the synthetic program.
    pub fn program_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Chooses the next cold path (maybe empty) and loop visit.
    fn start_episode(&mut self) {
        self.cold = 0..0;
        if self.rng.gen_bool(COLD_PATH_PROBABILITY) {
            let function = self.functions[self.rng.gen_range(0..self.functions.len())].clone();
            let len = self.rng.gen_range(COLD_PATH_BLOCKS).min(function.len());
            let start = function.start + self.rng.gen_range(0..=function.len() - len);
            self.cold = start..start + len;
        }
        let rank = self.loop_popularity.sample(&mut self.rng) as usize;
        let index = rank.saturating_sub(1).min(self.loops.len() - 1);
        self.body = self.loops[index].clone();
        self.position = self.body.start;
        self.iterations_left = self.extra_iterations.sample(&mut self.rng);
    }
}

impl Iterator for CodeLike {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(block) = self.cold.next() {
                return Some(self.blocks[block]);
            }
            if self.position < self.body.end {
                let address = self.loop_blocks[self.position];
                self.position += 1;
                return Some(address);
            }
            if self.iterations_left > 0 {
                self.iterations_left -= 1;
                self.position = self.body.start;
                continue;
            }
            self.start_episode();
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_and_inside_the_text_segment() {
        let code = CodeLike::new(1);
        assert!(code.functions.len() == FUNCTIONS);
        for f in &code.functions {
            assert!(BLOCKS_PER_FUNCTION.contains(&f.len()));
            assert_eq!(code.blocks[f.start] % FUNCTION_ALIGN, 0);
            let blocks = &code.blocks[f.clone()];
            assert!(blocks.windows(2).all(|w| {
                let size = w[1] - w[0];
                size % 4 == 0 && (8..=96).contains(&size)
            }));
        }
        assert_eq!(code.loops.len(), LOOPS);
        for body in &code.loops {
            let body = &code.loop_blocks[body.clone()];
            assert!(body.len() >= 3 && body.len() <= 12);
            assert!(body.windows(2).all(|w| w[0] < w[1]), "{body:x?}");
        }
        assert!(code.blocks[0] == TEXT_BASE);
    }

    #[test]
    fn every_value_is_a_block_start() {
        let code = CodeLike::new(5);
        let starts: std::collections::HashSet<u64> = code.blocks.iter().copied().collect();
        assert!(code
            .take(200_000)
            .all(|a| starts.contains(&a) && a % 4 == 0));
    }
}
