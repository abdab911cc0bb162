//! A flat spatial hash grid for the collision step.
//!
//! Bodies are bucketed by the cell of their centre with a counting sort:
//! count per cell, prefix sums, scatter. The result is one array sorted by
//! cell plus one `starts` array, so a cell's bodies, and a run of
//! neighbouring cells in one row, are contiguous slices. Every buffer is
//! kept between frames: after the first frame a rebuild allocates nothing.
//!
//! Pairs are found without looking at all pairs:
//!
//! - *Small* bodies (radius at most half a cell) can only touch bodies in
//!   their own or an adjacent cell, so each looks at the rest of its own
//!   cell, the cell to its right and the three cells below: every
//!   neighbouring pair of cells is visited once. This part is split into
//!   bands of rows, which may run on different threads; each band writes
//!   its own list, and the lists are joined in band order, so the pairs
//!   come out in the same order on any number of threads.
//! - *Large* bodies (the player, monsters) look at every cell within their
//!   radius plus the largest radius in the grid; a pair of two large bodies
//!   is reported by the one that comes first.

use mosaic::Entity;
use rayon::prelude::*;

/// Cell edge in world units. Particles have radius 0.5, so their cells
/// hold one or two bodies each at the densities the demo uses.
pub const CELL: f32 = 4.0;

/// Row bands the narrow phase is split into: fixed, so the output order
/// does not depend on the thread count.
const BANDS: usize = 32;

/// One collider as the grid stores it.
#[derive(Clone, Copy, Debug)]
struct Body {
    x: f32,
    y: f32,
    r: f32,
    entity: Entity,
}

/// The grid and its reusable buffers; see the module docs.
#[derive(Debug)]
pub struct SpatialGrid {
    cell: f32,
    cols: usize,
    rows: usize,
    /// Per cell, the index of its first body in `sorted`; one extra entry
    /// at the end.
    starts: Vec<u32>,
    /// Write positions during the scatter.
    cursor: Vec<u32>,
    /// Bodies in gathering order, and the cell of each.
    gathered: Vec<Body>,
    cell_of: Vec<u32>,
    /// Bodies sorted by cell (stable: gathering order within a cell).
    sorted: Vec<Body>,
    /// Indices into `sorted` of the large bodies.
    large: Vec<u32>,
    max_radius: f32,
    /// Pairs found, one list per band and one for the large bodies.
    bands: Vec<Vec<(Entity, Entity)>>,
    large_pairs: Vec<(Entity, Entity)>,
}

impl Default for SpatialGrid {
    fn default() -> Self {
        SpatialGrid::new(CELL)
    }
}

impl SpatialGrid {
    /// An empty grid with cells `cell` units wide.
    pub fn new(cell: f32) -> SpatialGrid {
        assert!(cell > 0.0, "a grid cell must have a positive size");
        SpatialGrid {
            cell,
            cols: 0,
            rows: 0,
            starts: Vec::new(),
            cursor: Vec::new(),
            gathered: Vec::new(),
            cell_of: Vec::new(),
            sorted: Vec::new(),
            large: Vec::new(),
            max_radius: 0.0,
            bands: Vec::new(),
            large_pairs: Vec::new(),
        }
    }

    /// Starts a rebuild for an area of `width` by `height` (anything
    /// outside is clamped to the border cells). Follow with
    /// [`SpatialGrid::insert`] for each body, then [`SpatialGrid::sort`].
    pub fn clear(&mut self, width: f32, height: f32) {
        self.cols = ((width / self.cell).ceil() as usize).max(1);
        self.rows = ((height / self.cell).ceil() as usize).max(1);
        self.starts.clear();
        self.starts.resize(self.cols * self.rows + 1, 0);
        self.gathered.clear();
        self.cell_of.clear();
        self.large.clear();
        self.max_radius = 0.0;
    }

    /// Adds a body (after [`SpatialGrid::clear`]).
    #[inline]
    pub fn insert(&mut self, entity: Entity, x: f32, y: f32, radius: f32) {
        let cell = self.cell_index(x, y);
        self.starts[cell + 1] += 1;
        self.cell_of.push(cell as u32);
        self.gathered.push(Body {
            x,
            y,
            r: radius,
            entity,
        });
        self.max_radius = self.max_radius.max(radius);
    }

    /// Finishes a rebuild: the counting sort.
    pub fn sort(&mut self) {
        let mut sum = 0u32;
        for s in &mut self.starts {
            sum += *s;
            *s = sum;
        }
        self.cursor.clear();
        self.cursor
            .extend_from_slice(&self.starts[..self.starts.len() - 1]);
        // Every slot is overwritten below, so only a change of length
        // touches the array here (with any body as the filler).
        match self.gathered.first() {
            Some(&filler) => self.sorted.resize(self.gathered.len(), filler),
            None => self.sorted.clear(),
        }
        let half = self.cell * 0.5;
        for (body, &cell) in self.gathered.iter().zip(&self.cell_of) {
            let slot = &mut self.cursor[cell as usize];
            self.sorted[*slot as usize] = *body;
            *slot += 1;
        }
        for (i, body) in self.sorted.iter().enumerate() {
            if body.r > half {
                self.large.push(i as u32);
            }
        }
    }

    /// Number of bodies in the grid.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True if the grid holds no body.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Finds every overlapping pair (after [`SpatialGrid::sort`]) and calls
    /// `f` on each, in an order that depends only on the bodies inserted.
    /// `parallel` splits the small bodies' part over the thread pool.
    pub fn for_each_pair(&mut self, parallel: bool, mut f: impl FnMut(Entity, Entity)) {
        let bands = BANDS.min(self.rows);
        self.bands.resize_with(bands, Vec::new);
        let rows_per_band = self.rows.div_ceil(bands);
        let view = View {
            cols: self.cols,
            rows: self.rows,
            half: self.cell * 0.5,
            starts: &self.starts,
            sorted: &self.sorted,
        };
        let run = |(band, out): (usize, &mut Vec<(Entity, Entity)>)| {
            out.clear();
            let first = band * rows_per_band;
            let last = (first + rows_per_band).min(view.rows);
            for row in first..last {
                view.small_pairs_in_row(row, out);
            }
        };
        if parallel {
            self.bands.par_iter_mut().enumerate().for_each(run);
        } else {
            self.bands.iter_mut().enumerate().for_each(run);
        }
        self.large_pairs.clear();
        for &i in &self.large {
            view.large_pairs(
                i as usize,
                self.cell,
                self.max_radius,
                &mut self.large_pairs,
            );
        }
        for &(a, b) in self.bands.iter().flatten().chain(&self.large_pairs) {
            f(a, b);
        }
    }

    #[inline]
    fn cell_index(&self, x: f32, y: f32) -> usize {
        let cx = ((x / self.cell) as isize).clamp(0, self.cols as isize - 1) as usize;
        let cy = ((y / self.cell) as isize).clamp(0, self.rows as isize - 1) as usize;
        cy * self.cols + cx
    }
}

/// The read-only part of the grid the pair search needs (shared between
/// bands).
struct View<'a> {
    cols: usize,
    rows: usize,
    half: f32,
    starts: &'a [u32],
    sorted: &'a [Body],
}

impl View<'_> {
    /// The bodies of cells `first..=last` of `row`: one contiguous slice.
    #[inline]
    fn span(&self, row: usize, first: usize, last: usize) -> std::ops::Range<usize> {
        let base = row * self.cols;
        self.starts[base + first] as usize..self.starts[base + last + 1] as usize
    }

    /// Pairs of small bodies with the first one in `row`.
    fn small_pairs_in_row(&self, row: usize, out: &mut Vec<(Entity, Entity)>) {
        let below = row + 1 < self.rows;
        for col in 0..self.cols {
            let own = self.span(row, col, col);
            if own.is_empty() {
                continue;
            }
            // The rest of this cell and the whole cell to the right are one
            // slice; so are the three cells below.
            let right_end = self.span(row, col, (col + 1).min(self.cols - 1)).end;
            let under = if below {
                self.span(row + 1, col.saturating_sub(1), (col + 1).min(self.cols - 1))
            } else {
                0..0
            };
            for i in own {
                let a = self.sorted[i];
                if a.r > self.half {
                    continue;
                }
                for b in self.sorted[i + 1..right_end]
                    .iter()
                    .chain(&self.sorted[under.clone()])
                {
                    if b.r <= self.half && touching(&a, b) {
                        out.push((a.entity, b.entity));
                    }
                }
            }
        }
    }

    /// Pairs of the large body at `i` with every small body and with the
    /// large bodies after it.
    fn large_pairs(&self, i: usize, cell: f32, max_radius: f32, out: &mut Vec<(Entity, Entity)>) {
        let a = self.sorted[i];
        let reach = ((a.r + max_radius) / cell).ceil() as isize;
        let cx = (a.x / cell) as isize;
        let cy = (a.y / cell) as isize;
        let clamp_col = |c: isize| c.clamp(0, self.cols as isize - 1) as usize;
        let clamp_row = |r: isize| r.clamp(0, self.rows as isize - 1) as usize;
        let (first, last) = (clamp_col(cx - reach), clamp_col(cx + reach));
        for row in clamp_row(cy - reach)..=clamp_row(cy + reach) {
            for j in self.span(row, first, last) {
                let b = &self.sorted[j];
                let b_large = b.r > self.half;
                if j == i || (b_large && j < i) {
                    continue;
                }
                if touching(&a, b) {
                    out.push((a.entity, b.entity));
                }
            }
        }
    }
}

#[inline]
fn touching(a: &Body, b: &Body) -> bool {
    let (dx, dy) = (a.x - b.x, a.y - b.y);
    let reach = a.r + b.r;
    dx * dx + dy * dy < reach * reach
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic::World;
    use rand::{RngExt, SeedableRng};

    /// The grid finds exactly the pairs a brute-force check finds.
    #[test]
    fn matches_brute_force() {
        let mut world = World::new();
        let mut rng = rand_pcg::Pcg32::seed_from_u64(3);
        let (w, h) = (100.0, 60.0);
        let bodies: Vec<(Entity, f32, f32, f32)> = (0..600)
            .map(|i| {
                let r = if i % 50 == 0 {
                    7.5
                } else {
                    rng.random_range(0.2..2.0)
                };
                (
                    world.spawn(()),
                    rng.random_range(-2.0..w + 2.0),
                    rng.random_range(-2.0..h + 2.0),
                    r,
                )
            })
            .collect();
        let mut expected = Vec::new();
        for (i, a) in bodies.iter().enumerate() {
            for b in &bodies[i + 1..] {
                let (dx, dy) = (a.1 - b.1, a.2 - b.2);
                if dx * dx + dy * dy < (a.3 + b.3) * (a.3 + b.3) {
                    expected.push(key(a.0, b.0));
                }
            }
        }
        expected.sort();
        for parallel in [false, true] {
            let mut grid = SpatialGrid::new(CELL);
            // Twice: the second rebuild reuses the buffers.
            for _ in 0..2 {
                grid.clear(w, h);
                for &(e, x, y, r) in &bodies {
                    grid.insert(e, x, y, r);
                }
                grid.sort();
                let mut found = Vec::new();
                grid.for_each_pair(parallel, |a, b| found.push(key(a, b)));
                found.sort();
                assert_eq!(found, expected);
            }
        }
        assert!(!expected.is_empty());
    }

    fn key(a: Entity, b: Entity) -> (u64, u64) {
        let (a, b) = (a.to_bits(), b.to_bits());
        (a.min(b), a.max(b))
    }
}
