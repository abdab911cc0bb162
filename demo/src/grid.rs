//! A flat spatial hash grid for the collision step.
//!
//! Bodies are bucketed by the cell of their centre in two passes, both of
//! which can run on several threads:
//!
//! 1. *Binning.* The input comes in chunks (a query's
//!    [`par_chunks`](mosaic::Query::par_chunks)); each chunk drops its
//!    bodies into one list per band of rows. A chunk writes only its own
//!    lists, and only a few dozen write streams at a time, which stay in
//!    cache.
//! 2. *Sorting.* Each band reads its lists from every chunk, in chunk
//!    order, and counting-sorts them by cell into its segment of one array
//!    sorted by cell. A band's cell counters are small enough to stay in
//!    cache, which one counting sort over all cells is not: at a million
//!    bodies that is a million counters hit at random.
//!
//! The result is the sorted array plus one `starts` array, so a cell's
//! bodies, and a run of neighbouring cells in one row, are contiguous
//! slices. Both passes are stable (a cell keeps the order the bodies were
//! given in), so the grid is the same however the input was chunked and
//! however many threads ran. Every buffer is kept between frames: after the
//! first frame a rebuild allocates nothing but a list of chunk references.
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
//! The small bodies' search is split into the same bands; each band writes
//! its own list of pairs, and pairs are reported band by band, so the
//! result is the same on any number of threads.

use std::sync::{Mutex, PoisonError};

use mosaic::Entity;
use rayon::prelude::*;

/// Cell edge in world units. A particle has
/// [`AREA_PER_PARTICLE`](crate::AREA_PER_PARTICLE) of room, so a cell holds
/// four on average.
pub const CELL: f32 = 8.0;

/// Bodies of radius up to this share of a cell are small.
const SMALL: f32 = 1.0 / 8.0;

/// Row bands the work is split into: fixed, so the output order does not
/// depend on the thread count. Many, so that a band's part of the sorted
/// array (at a million bodies, about 8k bodies, 160 KB) stays in cache
/// while it is filled in whatever order the bodies come: with 32 bands,
/// sorting took twice as long once the particles had drifted away from
/// the spatial order they were spawned in as it did right after spawning.
const BANDS: usize = 128;

/// One collider as the grid stores it, entity included: the pairs come out
/// in cell order, and looking entities up elsewhere would then be a cache
/// miss apiece.
#[derive(Clone, Copy, Debug)]
struct Body {
    x: f32,
    y: f32,
    r: f32,
    /// The cell holding the centre (`row * cols + col`), found once, when
    /// the body is binned: the sort reads it twice.
    cell: u32,
    entity: Entity,
}

/// One band of rows: its scratch space, and what the sort and the search
/// find in it.
#[derive(Debug, Default)]
struct Band {
    /// Per cell of the band: counts, then write positions.
    cursor: Vec<u32>,
    /// Indices into `sorted` of the band's large bodies.
    large: Vec<u32>,
    /// Pairs found.
    pairs: Vec<(Entity, Entity)>,
}

/// What one chunk of the input put in each band (kept between frames).
#[derive(Debug, Default)]
struct ChunkBins {
    /// Per band, the chunk's bodies in that band, in the order given.
    bands: Vec<Vec<Body>>,
    /// The largest radius of all, and of the small bodies, in the chunk.
    max_radius: f32,
    max_small: f32,
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
/// grid.rebuild(20.0, 20.0, false, bodies);
/// let mut pairs = Vec::new();
/// grid.for_each_pair(false, |x, y| pairs.push((x, y)));
/// assert_eq!(pairs, [(a, b)]);
/// ```
#[derive(Debug)]
pub struct SpatialGrid {
    cell: f32,
    cols: usize,
    rows: usize,
    rows_per_band: usize,
    /// Per cell, the index of its first body in `sorted`; one extra entry
    /// at the end.
    starts: Vec<u32>,
    /// Per input chunk, its bodies binned by band; the first `chunks` are
    /// in use. A lock each, so chunks can be added from several threads
    /// (each chunk's lock is taken once, by one thread: never contended).
    bins: Vec<Mutex<ChunkBins>>,
    chunks: usize,
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
            rows_per_band: 1,
            starts: Vec::new(),
            bins: Vec::new(),
            chunks: 0,
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
    /// outside it are clamped to the border cells) from `bodies`, each
    /// `(entity, x, y, radius)`: [`begin`](Self::begin) with one chunk,
    /// [`add_chunk`](Self::add_chunk), [`finish`](Self::finish).
    pub fn rebuild(
        &mut self,
        width: f32,
        height: f32,
        parallel: bool,
        bodies: impl IntoIterator<Item = (Entity, f32, f32, f32)>,
    ) {
        self.begin(width, height, 1);
        self.add_chunk(0, bodies);
        self.finish(parallel);
    }

    /// Starts a rebuild over an area of `width` by `height` from `chunks`
    /// chunks of bodies, to be given to [`add_chunk`](Self::add_chunk) (in
    /// any order, from any thread) before [`finish`](Self::finish). The
    /// grid comes out the same as if the chunks' bodies were given in one
    /// run, in chunk order.
    pub fn begin(&mut self, width: f32, height: f32, chunks: usize) {
        let cell = self.cell;
        self.cols = ((width / cell).ceil() as usize).max(1);
        self.rows = ((height / cell).ceil() as usize).max(1);
        let bands = BANDS.min(self.rows);
        self.rows_per_band = self.rows.div_ceil(bands);
        self.bands.resize_with(bands, Band::default);
        if self.bins.len() < chunks {
            self.bins.resize_with(chunks, Default::default);
        }
        self.chunks = chunks;
        for bins in &mut self.bins[..chunks] {
            let bins = bins.get_mut().unwrap_or_else(PoisonError::into_inner);
            bins.bands.resize_with(bands, Vec::new);
            bins.bands.iter_mut().for_each(Vec::clear);
            bins.max_radius = 0.0;
            bins.max_small = 0.0;
        }
    }

    /// Adds chunk `chunk`'s bodies `(entity, x, y, radius)`: bins each
    /// into its band of rows. Takes `&self`, so different chunks can be
    /// added from different threads at once. Panics if `chunk` is not below
    /// the count given to [`begin`](Self::begin).
    pub fn add_chunk(
        &self,
        chunk: usize,
        bodies: impl IntoIterator<Item = (Entity, f32, f32, f32)>,
    ) {
        assert!(
            chunk < self.chunks,
            "chunk {chunk} added, but `begin` announced {} chunks",
            self.chunks
        );
        let mut bins = self.bins[chunk]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let bins = &mut *bins;
        let binner = self.binner();
        // A `for` loop: with `for_each` the query's `fold` did not inline
        // this body and cost half as much again (callgrind).
        for body in bodies {
            binner.add(bins, body);
        }
    }

    /// Adds every body, in order, cut into chunks of `chunk_len`: the same
    /// as [`add_chunk`](Self::add_chunk) for each chunk in turn, in one
    /// pass on this thread. Panics if there are more bodies than the
    /// chunks announced to [`begin`](Self::begin) hold.
    pub fn add_chunks(
        &mut self,
        chunk_len: usize,
        bodies: impl IntoIterator<Item = (Entity, f32, f32, f32)>,
    ) {
        let binner = self.binner();
        let announced = self.chunks;
        let chunks = self.bins[..announced]
            .iter_mut()
            .map(|bins| bins.get_mut().unwrap_or_else(PoisonError::into_inner));
        let mut bodies = bodies.into_iter();
        for bins in chunks {
            for body in bodies.by_ref().take(chunk_len.max(1)) {
                binner.add(bins, body);
            }
        }
        assert!(
            bodies.next().is_none(),
            "more bodies than the {announced} chunks `begin` announced hold"
        );
    }

    /// What binning a body needs to know of the grid.
    fn binner(&self) -> Binner {
        Binner {
            cell: self.cell,
            cols: self.cols,
            rows: self.rows,
            rows_per_band: self.rows_per_band,
            small: self.cell * SMALL,
        }
    }

    /// Sorts the bodies added since [`begin`](Self::begin) by cell, band
    /// by band (on the thread pool if `parallel`).
    pub fn finish(&mut self, parallel: bool) {
        let (cols, rows) = (self.cols, self.rows);
        let chunks: Vec<&ChunkBins> = self.bins[..self.chunks]
            .iter_mut()
            .map(|bins| &*bins.get_mut().unwrap_or_else(PoisonError::into_inner))
            .collect();
        self.max_radius = chunks.iter().fold(0.0, |m, c| m.max(c.max_radius));
        self.max_small = chunks.iter().fold(0.0, |m, c| m.max(c.max_small));
        let band_len = |k: usize| chunks.iter().map(|c| c.bands[k].len()).sum::<usize>();
        let n: usize = (0..self.bands.len()).map(band_len).sum();
        // Every slot is overwritten, so only a change of length touches
        // the array here (any body will do as the filler).
        match chunks.iter().flat_map(|c| c.bands.iter().flatten()).next() {
            Some(&filler) => self.sorted.resize(n, filler),
            None => self.sorted.clear(),
        }
        self.starts.resize(cols * rows + 1, 0);
        self.starts[cols * rows] = n as u32;

        let per_band = self.rows_per_band;
        let mut jobs = Vec::with_capacity(self.bands.len());
        let (mut sorted, mut starts) = (&mut self.sorted[..], &mut self.starts[..cols * rows]);
        let mut first_index = 0;
        for (k, band) in self.bands.iter_mut().enumerate() {
            let first = (k * per_band).min(rows);
            let last = (first + per_band).min(rows);
            let len = band_len(k);
            let (band_sorted, rest) = std::mem::take(&mut sorted).split_at_mut(len);
            sorted = rest;
            let (band_starts, rest) =
                std::mem::take(&mut starts).split_at_mut((last - first) * cols);
            starts = rest;
            jobs.push((k, band, first_index, band_sorted, band_starts));
            first_index += len as u32;
        }
        let level = Level {
            cols,
            rows,
            rows_per_band: per_band,
            small: self.cell * SMALL,
            chunks: &chunks,
        };
        let sort = |(k, band, first_index, sorted, starts): (
            usize,
            &mut Band,
            u32,
            &mut [Body],
            &mut [u32],
        )| level.sort_band(k, band, first_index, sorted, starts);
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
        let rows_per_band = self.rows_per_band;
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

/// A sort key that puts bodies in the order of the cells (of [`CELL`]
/// units) holding them: by row, then by column. Bodies sorted by it are
/// read by a rebuild almost in order.
///
/// # Example
/// ```
/// use mosaic_demo::grid::{cell_key, CELL};
/// assert!(cell_key(CELL * 5.0, 0.0) < cell_key(0.0, CELL));
/// ```
pub fn cell_key(x: f32, y: f32) -> (u32, u32) {
    ((y / CELL) as u32, (x / CELL) as u32)
}

/// The column and row of the cell holding `(x, y)`, clamped to the grid.
#[inline]
fn cell_xy(x: f32, y: f32, cell: f32, cols: usize, rows: usize) -> (usize, usize) {
    let cx = ((x / cell) as isize).clamp(0, cols as isize - 1) as usize;
    let cy = ((y / cell) as isize).clamp(0, rows as isize - 1) as usize;
    (cx, cy)
}

/// The grid's shape, as binning a body needs it.
#[derive(Clone, Copy)]
struct Binner {
    cell: f32,
    cols: usize,
    rows: usize,
    rows_per_band: usize,
    small: f32,
}

impl Binner {
    /// Puts one body `(entity, x, y, radius)` in its band's list of `bins`.
    #[inline(always)]
    fn add(&self, bins: &mut ChunkBins, (entity, x, y, r): (Entity, f32, f32, f32)) {
        let (col, row) = cell_xy(x, y, self.cell, self.cols, self.rows);
        let body = Body {
            x,
            y,
            r,
            cell: (row * self.cols + col) as u32,
            entity,
        };
        bins.bands[row / self.rows_per_band].push(body);
        if r > bins.max_radius {
            bins.max_radius = r;
        }
        if r <= self.small && r > bins.max_small {
            bins.max_small = r;
        }
    }
}

/// Turns counts into running totals, in place.
fn prefix_sums(values: &mut [u32]) {
    let mut sum = 0;
    for v in values {
        sum += *v;
        *v = sum;
    }
}

/// What sorting a band reads (shared between bands).
struct Level<'a> {
    cols: usize,
    rows: usize,
    rows_per_band: usize,
    small: f32,
    chunks: &'a [&'a ChunkBins],
}

impl Level<'_> {
    /// Sorts band `k`'s bodies by cell into `sorted` (the band's segment of
    /// the sorted array, which starts at `first_index`) and fills `starts`
    /// (the band's cells' entries): a counting sort over the band's cells,
    /// reading the chunks in order, so it is stable.
    fn sort_band(
        &self,
        k: usize,
        band: &mut Band,
        first_index: u32,
        sorted: &mut [Body],
        starts: &mut [u32],
    ) {
        let first_cell = (k * self.rows_per_band).min(self.rows) * self.cols;
        let cells = starts.len();
        band.cursor.clear();
        band.cursor.resize(cells + 1, 0);
        band.large.clear();
        // Counts, shifted by one cell: the running totals then give each
        // cell's first slot.
        let counts = &mut band.cursor[1..];
        for chunk in self.chunks {
            for body in &chunk.bands[k] {
                counts[body.cell as usize - first_cell] += 1;
            }
        }
        prefix_sums(&mut band.cursor);
        for (start, &offset) in starts.iter_mut().zip(&band.cursor) {
            *start = first_index + offset;
        }
        let cursor = &mut band.cursor[..cells];
        for chunk in self.chunks {
            for body in &chunk.bands[k] {
                let slot = &mut cursor[body.cell as usize - first_cell];
                sorted[*slot as usize] = *body;
                if body.r > self.small {
                    band.large.push(first_index + *slot);
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
        let (cols, cell, small, max_small) = (self.cols, self.cell, self.small, self.max_small);
        let sorted = self.sorted;
        for row in first..last {
            // The row's cells' starts, and the next row's, each ending with
            // the first start of the row after it.
            let here = &self.starts[row * cols..=(row + 1) * cols];
            let above = if row + 1 < self.rows {
                &self.starts[(row + 1) * cols..=(row + 2) * cols]
            } else {
                &[]
            };
            let top = (row + 1) as f32 * cell;
            for col in 0..cols {
                let (start, end) = (here[col] as usize, here[col + 1] as usize);
                if start == end {
                    continue;
                }
                let (left, right) = (col as f32 * cell, (col + 1) as f32 * cell);
                let has_east = col + 1 < cols;
                // This cell's bodies, then those of the cell to its right.
                let bodies = &sorted[start..if has_east {
                    here[col + 2] as usize
                } else {
                    end
                }];
                let own = end - start;
                for (i, a) in bodies[..own].iter().enumerate() {
                    if a.r > small {
                        continue;
                    }
                    let reach = a.r + max_small;
                    let east = has_east && right - a.x < reach;
                    // The rest of this cell, and the cell to the right if
                    // within reach: one slice.
                    let rest = &bodies[i + 1..if east { bodies.len() } else { own }];
                    pairs_with(a, rest, small, reach, out);
                    if !above.is_empty() && top - a.y < reach {
                        // The next row: the cell over this one, and those
                        // over its neighbours if within reach.
                        let west = col > 0 && a.x - left < reach;
                        let (lo, hi) = (col - usize::from(west), col + usize::from(east));
                        let span = above[lo] as usize..above[hi + 1] as usize;
                        pairs_with(a, &sorted[span], small, reach, out);
                    }
                }
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

/// Reports small body `a` with each small body of `others` it touches.
/// `reach` is `a`'s radius plus the largest small radius: no small body
/// farther away touches `a`, and that one test turns most of them away.
#[inline(always)]
fn pairs_with(a: &Body, others: &[Body], small: f32, reach: f32, out: &mut Vec<(Entity, Entity)>) {
    let within = reach * reach;
    for b in others {
        let (dx, dy) = (a.x - b.x, a.y - b.y);
        let d2 = dx * dx + dy * dy;
        // Then the test `touching` makes, on the same values.
        if d2 < within && b.r <= small {
            let contact = a.r + b.r;
            if d2 < contact * contact {
                out.push((a.entity, b.entity));
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
                grid.rebuild(w, h, parallel, bodies.iter().copied());
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

    /// Chunked input, added in any order, gives the grid one pass gives:
    /// the same pairs in the same order.
    #[test]
    fn chunks_in_any_order_match_one_pass() {
        let mut world = World::new();
        let mut rng = rand_pcg::Pcg32::seed_from_u64(11);
        let bodies: Vec<(Entity, f32, f32, f32)> = (0..2_000)
            .map(|i| {
                let r = if i % 97 == 0 {
                    6.0
                } else {
                    rng.random_range(0.2..1.0)
                };
                (
                    world.spawn(()),
                    rng.random_range(0.0..120.0),
                    rng.random_range(0.0..90.0),
                    r,
                )
            })
            .collect();
        let pairs = |grid: &mut SpatialGrid, parallel: bool| {
            let mut found = Vec::new();
            grid.for_each_pair(parallel, |a, b| found.push((a, b)));
            found
        };
        let mut one = SpatialGrid::new(4.0);
        one.rebuild(120.0, 90.0, false, bodies.iter().copied());
        let expected = pairs(&mut one, false);
        assert!(expected.len() > 100, "a crowd with contacts");
        let mut grid = SpatialGrid::new(4.0);
        for chunk_len in [1, 37, 500, 1_999, 5_000] {
            let chunks: Vec<_> = bodies.chunks(chunk_len).collect();
            grid.begin(120.0, 90.0, chunks.len());
            // Backwards, and in parallel: neither may matter.
            chunks
                .par_iter()
                .enumerate()
                .rev()
                .for_each(|(k, chunk)| grid.add_chunk(k, chunk.iter().copied()));
            grid.finish(true);
            assert_eq!(grid.len(), bodies.len());
            assert_eq!(pairs(&mut grid, true), expected, "chunk_len {chunk_len}");
            // The same chunks in one sequential pass.
            grid.begin(120.0, 90.0, chunks.len());
            grid.add_chunks(chunk_len, bodies.iter().copied());
            grid.finish(false);
            assert_eq!(grid.len(), bodies.len());
            assert_eq!(pairs(&mut grid, false), expected, "chunk_len {chunk_len}");
        }
    }

    /// More bodies than the announced chunks hold is a caller's mistake,
    /// said so, not a silently dropped body.
    #[test]
    #[should_panic(expected = "more bodies than the 2 chunks")]
    fn add_chunks_refuses_too_many_bodies() {
        let mut world = World::new();
        let e = world.spawn(());
        let mut grid = SpatialGrid::default();
        grid.begin(10.0, 10.0, 2);
        grid.add_chunks(2, (0..5).map(|i| (e, i as f32, 1.0, 0.3)));
    }

    /// An empty grid and a grid of one body find nothing.
    #[test]
    fn empty_and_single() {
        let mut world = World::new();
        let e = world.spawn(());
        let mut grid = SpatialGrid::default();
        grid.rebuild(10.0, 10.0, false, []);
        assert!(grid.is_empty());
        grid.for_each_pair(false, |_, _| panic!("no pairs"));
        grid.rebuild(10.0, 10.0, true, [(e, 5.0, 5.0, 1.0)]);
        grid.for_each_pair(true, |_, _| panic!("no pairs"));
    }

    fn key(a: Entity, b: Entity) -> (u64, u64) {
        let (a, b) = (a.to_bits(), b.to_bits());
        (a.min(b), a.max(b))
    }
}
