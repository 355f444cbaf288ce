//! Exact replay: the temporal stream expanded, through the stratum dictionaries and the path
//! dictionary, back to the basic-block start addresses in execution order.

use crate::format::WppFile;

#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Stratum layer index (the element's level − 1).
    layer: usize,
    id: u32,
    trips_left: u64,
    pos: usize,
}

/// Replays a [`WppFile`]: an iterator over block start addresses, and [`Replay::next_path`]
/// for one path execution at a time (much faster when the consumer takes slices).
#[derive(Debug, Clone)]
pub struct Replay<'a> {
    file: &'a WppFile,
    next_item: usize,
    stack: Vec<Frame>,
    cur: &'a [u64],
    pos: usize,
    path_trips_left: u64,
    thread: u32,
    process: u32,
}

impl<'a> Replay<'a> {
    /// Replays `file` from its first block.
    pub fn new(file: &'a WppFile) -> Replay<'a> {
        Replay {
            file,
            next_item: 0,
            stack: Vec::new(),
            cur: &[],
            pos: 0,
            path_trips_left: 0,
            thread: 0,
            process: 0,
        }
    }

    /// The guest thread (creation index) whose path the replay is in: 0 until the stream's
    /// first thread mark, then the thread each mark names.
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// The (process, program) row of `run.processes` whose path the replay is in: 0 until
    /// the stream's first process mark, then the row each mark names.
    pub fn process(&self) -> u32 {
        self.process
    }

    /// The next (path id, trip count) at the path level.
    fn next_path_run(&mut self) -> Option<(u32, u64)> {
        let f = self.file;
        loop {
            let it = if let Some(fr) = self.stack.last_mut() {
                let layer = &f.layers[fr.layer];
                let elem = layer.element(fr.id);
                if fr.pos == elem.len() {
                    fr.trips_left -= 1;
                    fr.pos = 0;
                    if fr.trips_left == 0 {
                        self.stack.pop();
                        continue;
                    }
                }
                let sym = elem[fr.pos];
                fr.pos += 1;
                layer.symbols[sym as usize]
            } else {
                let it = *f.items.get(self.next_item)?;
                self.next_item += 1;
                if it.is_thread_mark() {
                    self.thread = it.id;
                    continue;
                }
                if it.is_process_mark() {
                    self.process = it.id;
                    continue;
                }
                it
            };
            if it.level == 0 {
                return Some((it.id, it.trip));
            }
            self.stack.push(Frame {
                layer: usize::from(it.level) - 1,
                id: it.id,
                trips_left: it.trip,
                pos: 0,
            });
        }
    }

    /// The block start addresses of the next path execution, or `None` at the end.
    #[inline]
    pub fn next_path(&mut self) -> Option<&'a [u64]> {
        if self.path_trips_left == 0 {
            let (id, trip) = self.next_path_run()?;
            self.cur = self.file.path_addrs(id);
            self.path_trips_left = trip;
        }
        self.path_trips_left -= 1;
        self.pos = self.cur.len();
        Some(self.cur)
    }

    /// Calls `f` with the block start addresses of every remaining path execution in order.
    pub fn for_each_path(mut self, mut f: impl FnMut(&[u64])) {
        // the rest of a path the iterator is in the middle of
        if self.pos < self.cur.len() {
            f(&self.cur[self.pos..]);
        }
        for _ in 0..self.path_trips_left {
            f(self.cur);
        }
        while let Some((id, trip)) = self.next_path_run() {
            let p = self.file.path_addrs(id);
            for _ in 0..trip {
                f(p);
            }
        }
    }
}

impl Iterator for Replay<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if let Some(&a) = self.cur.get(self.pos) {
            self.pos += 1;
            return Some(a);
        }
        let p = self.next_path()?;
        self.pos = 1;
        p.first().copied()
    }
}
