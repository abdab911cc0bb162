//! `cargo run --release`: the mosaic showcase.
//!
//! Plays the built-in scene (or `--scene FILE`) for `--frames` fixed steps
//! and prints what the scene holds, the story of the run, a per-system
//! timing table, the frame rate and the archetypes at the end; draws the
//! last frame to `out/last_frame.png` and the run to `out/run.gif`.
//!
//! ```text
//! cargo run --release
//! cargo run --release -- --entities 1000000 --no-render --parallel
//! cargo run --release -- --inspect   # live, in the browser, until stopped
//! ```

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mosaic_demo::render::{Canvas, GifRecorder, Hud, Renderer, write_png};
use mosaic_demo::{Census, FPS, FRAME, Settings, Sim, Stats, VIEW, archetype_table};

/// Most particles `--entities` accepts (about 1.3 GB of world).
const MAX_PARTICLES: u64 = 20_000_000;

/// GIF frames at most; longer runs are sampled more sparsely.
const MAX_GIF_FRAMES: u64 = 150;

/// The mosaic showcase: trees, glowing particles, monsters with AI, a
/// ghost power-up, a spell and a stretch without input, played at a fixed
/// 50 frames a second with seeded randomness.
#[derive(Parser, Debug)]
#[command(name = "mosaic-demo", version)]
struct Args {
    /// Scene file (RON, the format of demo/assets/default.ron) to play
    /// instead of the built-in scene.
    #[arg(long, value_name = "FILE")]
    scene: Option<PathBuf>,
    /// Frames to simulate (50 a second).
    #[arg(long, value_name = "N", default_value_t = 400,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    frames: u64,
    /// Seed for every random choice: the same seed plays the same run.
    #[arg(long, value_name = "S", default_value_t = 7)]
    seed: u64,
    /// Particles to add to the scene.
    #[arg(long, value_name = "N", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(0..=MAX_PARTICLES))]
    entities: u64,
    /// Use threads: the parallel executor and parallel queries.
    #[arg(long)]
    parallel: bool,
    /// Skip the pictures.
    #[arg(long)]
    no_render: bool,
    /// Directory for the pictures.
    #[arg(long, value_name = "DIR", default_value = "out")]
    out: PathBuf,
    /// Play live at 50 frames a second with the inspector (mosaic-inspect)
    /// on ADDR, until stopped (Ctrl-C): prints the page's URL. `--frames`
    /// and the pictures do not apply.
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = "127.0.0.1:15702")]
    inspect: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut out = UntilClosed {
        inner: io::stdout().lock(),
        closed: false,
    };
    match run(&args, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop(message)) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The report's output: once the reader has gone (a closed pipe, as with
/// `| head`), further output is dropped and the run goes on, so the
/// pictures are still made.
struct UntilClosed<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> Write for UntilClosed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.inner.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// A failed run: this message says why.
struct Stop(String);

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop(message)
    }
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop(format!("cannot write the report: {e}"))
    }
}

fn run(args: &Args, out: &mut impl Write) -> Result<(), Stop> {
    let scene = match &args.scene {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read scene file {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let settings = Settings {
        seed: args.seed,
        particles: args.entities as usize,
        parallel: args.parallel,
        scene,
    };
    let mut sim = Sim::new(&settings).map_err(|e| match &args.scene {
        Some(path) => format!("cannot load scene {}: {e}", path.display()),
        None => e,
    })?;
    sim.set_timing(true);

    writeln!(
        out,
        "mosaic showcase: seed {}, {} frames at {FPS} fps ({:.1} s of game time), {} executor",
        args.seed,
        args.frames,
        args.frames as f64 * FRAME.as_secs_f64(),
        if args.parallel {
            "parallel"
        } else {
            "single-threaded"
        },
    )?;
    let source = match &args.scene {
        Some(path) => path.display().to_string(),
        None => "built-in, demo/assets/default.ron".to_owned(),
    };
    writeln!(out, "\nThe scene ({source}):")?;
    print_census(out, &mut sim)?;
    if let Some(addr) = &args.inspect {
        return inspect(&mut sim, addr, out);
    }

    let mut pictures = if args.no_render {
        None
    } else {
        Some(Pictures::start(&mut sim, args)?)
    };

    let progress = ProgressBar::with_draw_target(Some(args.frames), ProgressDrawTarget::hidden());
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames{msg}, eta {eta}")
            .map_err(|e| e.to_string())?,
    );
    let started = Instant::now();
    let mut shown = false;
    let mut simulating = Duration::ZERO;
    // Each frame's time, for the median: a frame that does extra work now
    // and then (`tidy`, the spell) moves the mean, not the median.
    let mut frame_ms: Vec<f32> = Vec::with_capacity(args.frames as usize);
    for _ in 0..args.frames {
        let step = Instant::now();
        sim.step();
        let took = step.elapsed();
        simulating += took;
        frame_ms.push(took.as_secs_f32() * 1000.0);
        if let Some(pictures) = &mut pictures {
            pictures.after_step(&mut sim)?;
        }
        progress.inc(1);
        if shown && sim.frame() % 10 == 0 {
            let fps = sim.frame() as f64 / simulating.as_secs_f64();
            progress.set_message(format!(" at {fps:.1} frames/s"));
        }
        if !shown && started.elapsed() > Duration::from_secs(1) {
            progress.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
    }
    progress.finish_and_clear();
    // The files first: a reader who stops reading the report early (a
    // closed pipe) must not cost the pictures.
    let drawn = pictures.is_some();
    let written = match pictures {
        Some(pictures) => pictures.finish(&mut sim)?,
        None => Vec::new(),
    };

    writeln!(out, "\nThe story:")?;
    let story = &sim.story().lines;
    if story.is_empty() {
        writeln!(out, "  (nothing notable happened)")?;
    }
    for line in story {
        writeln!(out, "  {line}")?;
    }
    let stats = *sim.world.resource::<Stats>();
    writeln!(
        out,
        "  -- {} collision events, {} hits on the player",
        stats.collisions, stats.hits
    )?;

    let (physics, frame) = sim.timings();
    writeln!(
        out,
        "\nSystems (time per system over the run), fixed-step physics at {FPS} Hz:"
    )?;
    for line in physics.to_string().lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "then, each frame, the frame schedule:")?;
    for line in frame.to_string().lines() {
        writeln!(out, "  {line}")?;
    }
    let fps = args.frames as f64 / simulating.as_secs_f64();
    let median = median(&mut frame_ms);
    writeln!(
        out,
        "  simulation: {} frames in {:.3} s = {fps:.1} frames/s ({:.3} ms a frame{})",
        args.frames,
        simulating.as_secs_f64(),
        simulating.as_secs_f64() * 1000.0 / args.frames as f64,
        if drawn { "; drawing not counted" } else { "" },
    )?;
    writeln!(
        out,
        "  median frame: {median:.3} ms = {:.1} frames/s",
        1000.0 / median
    )?;

    writeln!(out, "\nThe scene at the end:")?;
    print_census(out, &mut sim)?;
    writeln!(out, "\nArchetypes at the end (entities: components):")?;
    for row in archetype_table(&sim.world) {
        writeln!(out, "  {:>9}: {}", row.entities, row.components.join(" + "))?;
    }

    if drawn {
        writeln!(out, "\nPictures:")?;
        for line in written {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// `--inspect`: plays frames at the showcase's pace, answering the
/// inspector between frames, until the process is stopped.
fn inspect(sim: &mut Sim, addr: &str, out: &mut impl Write) -> Result<(), Stop> {
    let mut inspector = mosaic_inspect::Inspector::builder()
        .registry(mosaic_demo::inspector_registry())
        .serve(addr)
        .map_err(|e| e.to_string())?;
    writeln!(out, "\nInspector: open {} (Ctrl-C stops)", inspector.url())?;
    out.flush()?;
    let mut next = Instant::now();
    loop {
        if inspector.should_run_frame() {
            sim.step();
        }
        inspector.update(&mut sim.world, &mut sim.schedule);
        next += FRAME;
        let now = Instant::now();
        match next.checked_duration_since(now) {
            Some(wait) => std::thread::sleep(wait),
            None => next = now,
        }
    }
}

fn print_census(out: &mut impl Write, sim: &mut Sim) -> io::Result<()> {
    let census = Census::of(&mut sim.world);
    let scenery: Vec<String> = census
        .scenery
        .iter()
        .map(|(name, n)| plural(*n, name))
        .collect();
    let rows = [
        (
            if scenery.is_empty() {
                "no scenery".to_owned()
            } else {
                scenery.join(", ")
            },
            "standing still: Position + Appearance",
        ),
        (
            plural(census.particles, "particle"),
            "glowing, flying: Position + Velocity + Light",
        ),
        (
            plural(census.monsters, "monster"),
            "Health + Sprite + AI, falling (Gravity)",
        ),
        (
            plural(census.wisps, "wisp"),
            "AI but no Health: the spell spares them",
        ),
        (plural(census.players, "player"), "Health + Sprite + Player"),
        (
            plural(census.powerups, "power-up"),
            "PowerUp: touch it to become a ghost",
        ),
        (
            plural(census.carried, "carried light"),
            "Light + Carried, ChildOf a monster or the player",
        ),
    ];
    for (what, how) in rows {
        writeln!(out, "  {what:<22} {how}")?;
    }
    writeln!(
        out,
        "  = {} entities in {} archetypes",
        census.total,
        sim.world.archetypes().filter(|a| !a.is_empty()).count()
    )
}

/// The median of `values` (the mean of the middle two for an even count;
/// 0 for none). Reorders `values`.
fn median(values: &mut [f32]) -> f32 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    values.sort_unstable_by(f32::total_cmp);
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// `n` and `word`, with an `s` unless `n` is 1.
fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// The pictures being made: a GIF frame every few steps, the PNG at the
/// end.
struct Pictures {
    renderer: Renderer,
    canvas: Canvas,
    gif: GifRecorder,
    every: u64,
    png: PathBuf,
    gif_path: PathBuf,
}

impl Pictures {
    fn start(sim: &mut Sim, args: &Args) -> Result<Pictures, String> {
        std::fs::create_dir_all(&args.out)
            .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
        let (w, h) = (VIEW.0 as usize, VIEW.1 as usize);
        // Every 4th frame (12.5 a second) for short runs; sparser for long
        // ones, so the GIF stays small.
        let every = 4.max(args.frames.div_ceil(MAX_GIF_FRAMES));
        let delay = (every * 100 / FPS).clamp(2, 100) as u16;
        let gif_path = args.out.join("run.gif");
        Ok(Pictures {
            renderer: Renderer::new(&mut sim.world),
            canvas: Canvas::new(w, h),
            gif: GifRecorder::create(&gif_path, w, h, delay)?,
            every,
            png: args.out.join("last_frame.png"),
            gif_path,
        })
    }

    fn draw(&mut self, sim: &Sim) {
        let hud = Hud {
            frame: sim.frame(),
            input_on: sim.input_enabled(),
        };
        self.renderer.draw(&sim.world, hud, &mut self.canvas);
    }

    fn after_step(&mut self, sim: &mut Sim) -> Result<(), String> {
        if sim.frame() % self.every == 0 {
            self.draw(sim);
            self.gif.add(&self.canvas)?;
        }
        Ok(())
    }

    /// Draws the last frame, closes the files; returns what was written.
    fn finish(mut self, sim: &mut Sim) -> Result<Vec<String>, String> {
        self.draw(sim);
        if sim.frame() % self.every != 0 {
            self.gif.add(&self.canvas)?;
        }
        write_png(&self.png, &self.canvas)?;
        let frames = self.gif.finish()?;
        Ok(vec![
            format!(
                "{}  (the last frame, {}x{})",
                self.png.display(),
                self.canvas.width(),
                self.canvas.height()
            ),
            format!(
                "{}  (the run, {frames} frames, one every {} steps)",
                self.gif_path.display(),
                self.every
            ),
        ])
    }
}
