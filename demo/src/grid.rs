//! A flat spatial hash grid for the collision step.
//!
//! Bodies are bucketed by the cell of their centre with a counting sort in
//! two levels: first by row (counting, prefix sums, placing each body in its
//! row's segment as it is read), then, row by row, by column. Each level
//! counts into a table small enough to stay in cache (the rows, or one
//! row's columns), which one counting sort over all cells is not: at a
//! million bodies that is a million counters hit at random. The result is
//! one array sorted by cell plus one `starts` array, so a cell's bodies,
//! and a run of neighbouring cells in one row, are contiguous slices. Every
//! buffer is kept between frames: after the first frame a rebuild
//! allocates nothing (bar a few bytes of band bookkeeping).
//!
//! Pairs are found without looking at all pairs:
//!
//! - *Small* bodies (radius at most an eighth of a cell: the particles) can
//!   only touch small bodies in their own or an adjacent cell, so each
//!   looks at the rest of its own cell, the cell to its right and the three
//!   cells of the next row (every neighbouring pair of cells is visited
//!   once), and only at those whose shared edge is within its reach. The
//!   cells are sized for the crowd (a few bodies each, so few are empty),
//!   not for the bodies, so most small bodies sit deep inside their cell
//!   and look at no neighbour at all.
//! - *Large* bodies (the player, monsters, wisps) look at every cell within
//!   their radius plus the largest radius in the grid; a pair of two large
//!   bodies is reported by the one that comes first.
//!
//! The per-row sort and the small bodies' search are split into bands of
//! rows, which may run on different threads; each band writes its own part,
//! and pairs are reported band by band, so the result is the same on any
//! number of threads.

use mosaic::Entity;
use rayon::prelude::*;

/// Cell edge in world units. A particle has
/// [`AREA_PER_PARTICLE`](crate::AREA_PER_PARTICLE) of room, so a cell holds
/// four on average.
pub const CELL: f32 = 8.0;

/// Bodies of radius up to this share of a cell are small.
const SMALL: f32 = 1.0 / 8.0;

/// Row bands the work is split into: fixed, so the output order does not
/// depend on the thread count.
const BANDS: usize = 32;

/// One collider as the grid stores it, entity included: the pairs come out
/// in cell order, and looking entities up elsewhere would then be a cache
/// miss apiece.
#[derive(Clone, Copy, Debug)]
struct Body {
    x: f32,
    y: f32,
    r: f32,
    entity: Entity,
}

/// One band of rows: its scratch space, and what the sort and the search
/// find in it.
#[derive(Debug, Default)]
struct Band {
    /// Column counts, then column starts, of the row being sorted.
    columns: Vec<u32>,
    /// Indices into `sorted` of the band's large bodies.
    large: Vec<u32>,
    /// Pairs found.
    pairs: Vec<(Entity, Entity)>,
}

/// The grid and its reusable buffers; see the module docs.
///
/// # Example
/// ```
/// use mosaic::World;
/// use mosaic_demo::grid::SpatialGrid;
/// let mut world = World::new();
/// let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
/// let bodies = [(a, 1.0, 1.0, 0.5), (b, 1.5, 1.0, 0.5), (c, 9.0, 9.0, 0.5)];
/// let mut grid = SpatialGrid::default();
/// grid.rebuild(20.0, 20.0, false, || bodies.iter().copied());
/// let mut pairs = Vec::new();
/// grid.for_each_pair(false, |x, y| pairs.push((x, y)));
/// assert_eq!(pairs, [(a, b)]);
/// ```
#[derive(Debug)]
pub struct SpatialGrid {
    cell: f32,
    cols: usize,
    rows: usize,
    /// Per row, the index of its first body; one extra entry at the end.
    row_starts: Vec<u32>,
    /// Per cell, the index of its first body in `sorted`; one extra entry
    /// at the end.
    starts: Vec<u32>,
    /// Write positions while placing bodies in their rows.
    cursor: Vec<u32>,
    /// Bodies sorted by row (stable).
    by_row: Vec<Body>,
    /// Bodies sorted by cell (stable: the order given, within a cell).
    sorted: Vec<Body>,
    /// The largest radius of all, and of the small bodies.
    max_radius: f32,
    max_small: f32,
    bands: Vec<Band>,
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
            row_starts: Vec::new(),
            starts: Vec::new(),
            cursor: Vec::new(),
            by_row: Vec::new(),
            sorted: Vec::new(),
            max_radius: 0.0,
            max_small: 0.0,
            bands: Vec::new(),
            large_pairs: Vec::new(),
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

    /// Rebuilds the grid over an area of `width` by `height` (bodies
    /// outside it are clamped to the border cells) from the bodies
    /// `(entity, x, y, radius)` that `bodies` yields. `bodies` is called
    /// twice, once to count and once to place, and must yield the same
    /// bodies in the same order both times (a query does). `parallel`
    /// sorts the rows on the thread pool.
    pub fn rebuild<I>(&mut self, width: f32, height: f32, parallel: bool, bodies: impl Fn() -> I)
    where
        I: Iterator<Item = (Entity, f32, f32, f32)>,
    {
        let cell = self.cell;
        let cols = ((width / cell).ceil() as usize).max(1);
        let rows = ((height / cell).ceil() as usize).max(1);
        (self.cols, self.rows) = (cols, rows);

        // Level one: count per row, then place each body in its row.
        self.row_starts.clear();
        self.row_starts.resize(rows + 1, 0);
        for (_, x, y, _) in bodies() {
            self.row_starts[cell_xy(x, y, cell, cols, rows).1 + 1] += 1;
        }
        prefix_sums(&mut self.row_starts);
        let n = self.row_starts[rows] as usize;
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.row_starts[..rows]);
        self.max_radius = 0.0;
        self.max_small = 0.0;
        let small = cell * SMALL;
        // Every slot is overwritten, so only a change of length touches
        // the arrays here (any body will do as the filler).
        match bodies().next() {
            Some((entity, ..)) if n > 0 => {
                let filler = Body {
                    x: 0.0,
                    y: 0.0,
                    r: 0.0,
                    entity,
                };
                self.by_row.resize(n, filler);
                self.sorted.resize(n, filler);
            }
            _ => {
                self.by_row.clear();
                self.sorted.clear();
            }
        }
        let mut placed = 0;
        for (entity, x, y, r) in bodies() {
            let row = cell_xy(x, y, cell, cols, rows).1;
            let Some(slot) = self.cursor.get_mut(row) else {
                continue;
            };
            let Some(place) = self.by_row.get_mut(*slot as usize) else {
                // More bodies the second time than the first: ignore the
                // extra ones.
                continue;
            };
            *place = Body { x, y, r, entity };
            *slot += 1;
            placed += 1;
            self.max_radius = self.max_radius.max(r);
            if r <= small {
                self.max_small = self.max_small.max(r);
            }
        }
        assert_eq!(placed, n, "`bodies` must yield the same bodies both times");

        // Level two: within each row, by column; bands of rows at once.
        self.starts.resize(cols * rows + 1, 0);
        self.starts[cols * rows] = n as u32;
        let bands = BANDS.min(rows);
        self.bands.resize_with(bands, Band::default);
        let rows_per_band = rows.div_ceil(bands);
        let mut jobs = Vec::with_capacity(bands);
        let (mut sorted, mut starts) = (&mut self.sorted[..], &mut self.starts[..cols * rows]);
        for (k, band) in self.bands.iter_mut().enumerate() {
            let first = (k * rows_per_band).min(rows);
            let last = (first + rows_per_band).min(rows);
            let len = (self.row_starts[last] - self.row_starts[first]) as usize;
            let (band_sorted, rest) = std::mem::take(&mut sorted).split_at_mut(len);
            sorted = rest;
            let (band_starts, rest) =
                std::mem::take(&mut starts).split_at_mut((last - first) * cols);
            starts = rest;
            jobs.push((band, first..last, band_sorted, band_starts));
        }
        let level = Level {
            cell,
            cols,
            rows,
            small,
            row_starts: &self.row_starts,
            by_row: &self.by_row,
        };
        let sort = |(band, rows, sorted, starts): (
            &mut Band,
            std::ops::Range<usize>,
            &mut [Body],
            &mut [u32],
        )| level.sort_rows(band, rows, sorted, starts);
        if parallel {
            jobs.into_par_iter().for_each(sort);
        } else {
            jobs.into_iter().for_each(sort);
        }
    }

    /// Finds every overlapping pair (after [`SpatialGrid::rebuild`]) and
    /// calls `f` on each, in an order that depends only on the bodies given.
    /// `parallel` splits the small bodies' part over the thread pool.
    pub fn for_each_pair(&mut self, parallel: bool, mut f: impl FnMut(Entity, Entity)) {
        let bands = self.bands.len();
        if bands == 0 {
            return;
        }
        let rows_per_band = self.rows.div_ceil(bands);
        let view = View {
            cols: self.cols,
            rows: self.rows,
            cell: self.cell,
            small: self.cell * SMALL,
            max_small: self.max_small,
            starts: &self.starts,
            sorted: &self.sorted,
        };
        let search = |(k, band): (usize, &mut Band)| {
            band.pairs.clear();
            let first = (k * rows_per_band).min(view.rows);
            let last = (first + rows_per_band).min(view.rows);
            view.small_pairs(first, last, &mut band.pairs);
        };
        if parallel {
            self.bands.par_iter_mut().enumerate().for_each(search);
        } else {
            self.bands.iter_mut().enumerate().for_each(search);
        }
        self.large_pairs.clear();
        for &i in self.bands.iter().flat_map(|band| &band.large) {
            view.large_pairs(i as usize, self.max_radius, &mut self.large_pairs);
        }
        let small = self.bands.iter().flat_map(|band| &band.pairs);
        for &(a, b) in small.chain(&self.large_pairs) {
            f(a, b);
        }
    }
}

/// The column and row of the cell holding `(x, y)`, clamped to the grid.
#[inline]
fn cell_xy(x: f32, y: f32, cell: f32, cols: usize, rows: usize) -> (usize, usize) {
    let cx = ((x / cell) as isize).clamp(0, cols as isize - 1) as usize;
    let cy = ((y / cell) as isize).clamp(0, rows as isize - 1) as usize;
    (cx, cy)
}

/// Turns counts into running totals, in place.
fn prefix_sums(values: &mut [u32]) {
    let mut sum = 0;
    for v in values {
        sum += *v;
        *v = sum;
    }
}

/// What the second level of the sort reads (shared between bands).
struct Level<'a> {
    cell: f32,
    cols: usize,
    rows: usize,
    small: f32,
    row_starts: &'a [u32],
    by_row: &'a [Body],
}

impl Level<'_> {
    /// Sorts rows `rows` by column into `sorted` (their segment of the
    /// sorted array) and fills `starts` (their cells' entries).
    fn sort_rows(
        &self,
        band: &mut Band,
        rows: std::ops::Range<usize>,
        sorted: &mut [Body],
        starts: &mut [u32],
    ) {
        let cols = self.cols;
        let band_first = self.row_starts[rows.start];
        band.columns.resize(cols + 1, 0);
        band.large.clear();
        for (k, row) in rows.enumerate() {
            let (first, end) = (self.row_starts[row], self.row_starts[row + 1]);
            let segment = &self.by_row[first as usize..end as usize];
            let columns = &mut band.columns;
            columns.fill(0);
            for body in segment {
                columns[cell_xy(body.x, body.y, self.cell, cols, self.rows).0 + 1] += 1;
            }
            // Column counts to starts, relative to the band's segment.
            columns[0] = first - band_first;
            prefix_sums(columns);
            for (start, &column) in starts[k * cols..(k + 1) * cols].iter_mut().zip(&*columns) {
                *start = column + band_first;
            }
            for body in segment {
                let slot = &mut columns[cell_xy(body.x, body.y, self.cell, cols, self.rows).0];
                sorted[*slot as usize] = *body;
                if body.r > self.small {
                    band.large.push(band_first + *slot);
                }
                *slot += 1;
            }
        }
    }
}

/// The read-only part of the grid the pair search needs (shared between
/// bands).
struct View<'a> {
    cols: usize,
    rows: usize,
    cell: f32,
    /// The radius up to which a body is small.
    small: f32,
    /// The largest radius among the small bodies.
    max_small: f32,
    starts: &'a [u32],
    sorted: &'a [Body],
}

impl View<'_> {
    /// Pairs of small bodies whose first body lies in rows `first..last`.
    /// A body looks at the rest of its own cell, and at a neighbouring cell
    /// only if it is within reach of the edge they share.
    fn small_pairs(&self, first: usize, last: usize, out: &mut Vec<(Entity, Entity)>) {
        let (cols, cell) = (self.cols, self.cell);
        for row in first..last {
            let base = row * cols;
            let top = (row + 1) as f32 * cell;
            let next = row + 1 < self.rows;
            for col in 0..cols {
                let own = self.starts[base + col] as usize..self.starts[base + col + 1] as usize;
                let (left, right) = (col as f32 * cell, (col + 1) as f32 * cell);
                for i in own.clone() {
                    let a = self.sorted[i];
                    if a.r > self.small {
                        continue;
                    }
                    let reach = a.r + self.max_small;
                    let east = col + 1 < cols && right - a.x < reach;
                    // The rest of this cell, and the cell to the right if
                    // within reach: one slice.
                    let end = if east {
                        self.starts[base + col + 2] as usize
                    } else {
                        own.end
                    };
                    self.pairs_with(&a, &self.sorted[i + 1..end], out);
                    if next && top - a.y < reach {
                        // The next row: the cell over this one, and those
                        // over its neighbours if within reach.
                        let west = col > 0 && a.x - left < reach;
                        let span =
                            self.span(row + 1, col - usize::from(west), col + usize::from(east));
                        self.pairs_with(&a, &self.sorted[span], out);
                    }
                }
            }
        }
    }

    /// Reports `a` with each small body of `others` it touches.
    #[inline]
    fn pairs_with(&self, a: &Body, others: &[Body], out: &mut Vec<(Entity, Entity)>) {
        for b in others {
            if b.r <= self.small && touching(a, b) {
                out.push((a.entity, b.entity));
            }
        }
    }

    /// The bodies of cells `first..=last` of `row`: one contiguous slice.
    #[inline]
    fn span(&self, row: usize, first: usize, last: usize) -> std::ops::Range<usize> {
        let base = row * self.cols;
        self.starts[base + first] as usize..self.starts[base + last + 1] as usize
    }

    /// Pairs of the large body at `i` with every small body and with the
    /// large bodies after it.
    fn large_pairs(&self, i: usize, max_radius: f32, out: &mut Vec<(Entity, Entity)>) {
        let a = self.sorted[i];
        let reach = ((a.r + max_radius) / self.cell).ceil() as isize;
        let cx = (a.x / self.cell) as isize;
        let cy = (a.y / self.cell) as isize;
        let clamp_col = |c: isize| c.clamp(0, self.cols as isize - 1) as usize;
        let clamp_row = |r: isize| r.clamp(0, self.rows as isize - 1) as usize;
        let (first, last) = (clamp_col(cx - reach), clamp_col(cx + reach));
        for row in clamp_row(cy - reach)..=clamp_row(cy + reach) {
            for j in self.span(row, first, last) {
                let b = &self.sorted[j];
                let b_large = b.r > self.small;
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

    /// The grid finds exactly the pairs a brute-force check finds, in the
    /// same order with or without threads, for several cell sizes and
    /// crowds (bodies of all sizes, some outside the area).
    #[test]
    fn matches_brute_force() {
        for (seed, cell) in [(3, CELL), (4, 3.0), (5, 1.5), (6, 20.0)] {
            check_against_brute_force(seed, cell);
        }
    }

    fn check_against_brute_force(seed: u64, cell: f32) {
        let mut world = World::new();
        let mut rng = rand_pcg::Pcg32::seed_from_u64(seed);
        let (w, h) = (100.0, 60.0);
        let bodies: Vec<(Entity, f32, f32, f32)> = (0..800)
            .map(|i| {
                let r = match i % 50 {
                    0 => 7.5,
                    1..=5 => rng.random_range(1.0..3.0),
                    _ => rng.random_range(0.1..1.0),
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
        assert!(expected.len() > 50, "a crowd with contacts");
        let mut orders = Vec::new();
        for parallel in [false, true] {
            let mut grid = SpatialGrid::new(cell);
            // Twice: the second rebuild reuses the buffers.
            for _ in 0..2 {
                grid.rebuild(w, h, parallel, || bodies.iter().copied());
                assert_eq!(grid.len(), bodies.len());
                let mut found = Vec::new();
                grid.for_each_pair(parallel, |a, b| found.push(key(a, b)));
                orders.push(found.clone());
                found.sort();
                assert_eq!(found, expected, "seed {seed}, cell {cell}");
            }
        }
        assert!(orders.windows(2).all(|w| w[0] == w[1]));
    }

    /// An empty grid and a grid of one body find nothing.
    #[test]
    fn empty_and_single() {
        let mut world = World::new();
        let e = world.spawn(());
        let mut grid = SpatialGrid::default();
        grid.rebuild(10.0, 10.0, false, std::iter::empty);
        assert!(grid.is_empty());
        grid.for_each_pair(false, |_, _| panic!("no pairs"));
        grid.rebuild(10.0, 10.0, true, || std::iter::once((e, 5.0, 5.0, 1.0)));
        grid.for_each_pair(true, |_, _| panic!("no pairs"));
    }

    fn key(a: Entity, b: Entity) -> (u64, u64) {
        let (a, b) = (a.to_bits(), b.to_bits());
        (a.min(b), a.max(b))
    }
}
