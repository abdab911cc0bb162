//! The mosaic showcase in a browser page.
//!
//! The demo's simulation ([`mosaic_demo::Sim`]) and renderer compiled to
//! `wasm32-unknown-unknown`, driven by a few lines of hand-written
//! JavaScript (`web/page/main.js`): every animation frame the page steps
//! the simulation by the time that passed (fixed 20 ms steps, as the
//! terminal showcase), calls [`draw`] and copies the RGBA picture at the
//! returned pointer into a `<canvas>` (`putImageData`); it appends the new
//! story lines ([`story`]) and shows the per-system timing table
//! ([`timings`], measured with `performance.now()`).
//!
//! The player follows the showcase's scripted keys until someone presses
//! one: from then on the keyboard ([`set_keys`]) drives it. The director
//! still switches input off at 5 s and back on at 7 s, as in the terminal
//! story: held keys then do nothing.
//!
//! No `wasm-bindgen`: the interface is a handful of `extern "C"` functions
//! taking and returning numbers, and text passed as a pointer and length
//! into the module's memory (see [`text_ptr`]). The module imports two
//! functions ([`host`]).
//!
//! Build the page with `bash web/build.sh` (see demo/README.md, "In the browser").

pub mod host;

use std::cell::RefCell;
use std::fmt::Write as _;

use mosaic_demo::render::{Canvas, Hud, Renderer};
use mosaic_demo::{KeyScript, Keys, Settings, Sim, VIEW};

/// Bit of [`set_keys`]'s argument: walk left.
pub const KEY_LEFT: u32 = 1;
/// Bit of [`set_keys`]'s argument: walk right.
pub const KEY_RIGHT: u32 = 2;
/// Bit of [`set_keys`]'s argument: jump.
pub const KEY_JUMP: u32 = 4;

/// Everything the page runs.
struct Page {
    sim: Sim,
    renderer: Renderer,
    canvas: Canvas,
    /// The canvas as RGBA, what `ImageData` takes.
    rgba: Vec<u8>,
}

thread_local! {
    static PAGE: RefCell<Option<Page>> = const { RefCell::new(None) };
    /// Text handed to JavaScript: the last [`story`] or [`timings`].
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

fn with_page<R>(default: R, f: impl FnOnce(&mut Page) -> R) -> R {
    PAGE.with_borrow_mut(|page| page.as_mut().map_or(default, f))
}

fn set_text(text: String) {
    TEXT.with_borrow_mut(|t| *t = text);
}

/// Starts (or restarts) the showcase with `particles` particles and
/// `seed`, timing on. Returns 1, or 0 with the error in the text buffer.
///
/// ```
/// assert_eq!(mosaic_web::start(50, 7), 1);
/// mosaic_web::step(3);
/// assert_eq!(mosaic_web::frame(), 3);
/// ```
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn start(particles: u32, seed: u32) -> u32 {
    host::install();
    let settings = Settings {
        seed: u64::from(seed),
        particles: particles as usize,
        parallel: false,
        scene: None,
    };
    match Sim::new(&settings) {
        Ok(mut sim) => {
            sim.set_timing(true);
            let renderer = Renderer::new(&mut sim.world);
            let (w, h) = (VIEW.0 as usize, VIEW.1 as usize);
            let page = Page {
                sim,
                renderer,
                canvas: Canvas::new(w, h),
                rgba: vec![255; w * h * 4],
            };
            PAGE.with_borrow_mut(|p| *p = Some(page));
            1
        }
        Err(e) => {
            set_text(e);
            0
        }
    }
}

/// Runs `frames` frames of the simulation (20 ms each).
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn step(frames: u32) {
    with_page((), |page| page.sim.run(u64::from(frames)));
}

/// From now on the player's keys are `bits` ([`KEY_LEFT`] | [`KEY_RIGHT`] |
/// [`KEY_JUMP`]), replacing the showcase's script.
///
/// ```
/// use mosaic_web::*;
/// start(0, 7);
/// set_keys(KEY_LEFT);
/// step(1);
/// ```
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn set_keys(bits: u32) {
    let keys = Keys {
        left: bits & KEY_LEFT != 0,
        right: bits & KEY_RIGHT != 0,
        jump: bits & KEY_JUMP != 0,
    };
    with_page((), |page| {
        *page.sim.world.resource_mut::<KeyScript>() = KeyScript {
            steps: vec![(0, keys)],
        };
    });
}

/// Draws the world and returns a pointer to the picture: [`width`] ×
/// [`height`] RGBA pixels, row by row from the top, valid until the next
/// call into the module. Null before [`start`].
///
/// ```
/// mosaic_web::start(50, 7);
/// assert!(!mosaic_web::draw().is_null());
/// ```
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn draw() -> *const u8 {
    with_page(std::ptr::null(), |page| {
        let hud = Hud {
            frame: page.sim.frame(),
            input_on: page.sim.input_enabled(),
        };
        page.renderer.draw(&page.sim.world, hud, &mut page.canvas);
        for (rgba, rgb) in page
            .rgba
            .chunks_exact_mut(4)
            .zip(page.canvas.rgb().chunks_exact(3))
        {
            rgba[..3].copy_from_slice(rgb);
        }
        page.rgba.as_ptr()
    })
}

/// The picture's width in pixels.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn width() -> u32 {
    VIEW.0
}

/// The picture's height in pixels.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn height() -> u32 {
    VIEW.1
}

/// Frames run so far (0 before [`start`]).
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn frame() -> u32 {
    with_page(0, |page| page.sim.frame() as u32)
}

/// Entities in the world (0 before [`start`]).
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn entities() -> u32 {
    with_page(0, |page| page.sim.world.len() as u32)
}

/// 1 while the `input` system is on.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn input_on() -> u32 {
    with_page(0, |page| u32::from(page.sim.input_enabled()))
}

/// Puts the story lines from line `from` on into the text buffer, one a
/// line, and returns how many lines the story has.
///
/// ```
/// mosaic_web::start(50, 7);
/// mosaic_web::step(2);
/// assert!(mosaic_web::story(0) >= 1);
/// assert!(mosaic_web::text().contains("the level begins"));
/// ```
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn story(from: u32) -> u32 {
    let (text, total) = with_page((String::new(), 0), |page| {
        let lines = &page.sim.story().lines;
        let mut text = String::new();
        for line in lines.iter().skip(from as usize) {
            let _ = writeln!(text, "{line}");
        }
        (text, lines.len() as u32)
    });
    set_text(text);
    total
}

/// Puts the per-system timing table (the fixed-step physics', then the
/// frame schedule's) into the text buffer.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn timings() {
    let text = with_page(String::new(), |page| {
        let (physics, frame) = page.sim.timings();
        format!("fixed step (FixedUpdate):\n{physics}\nframe schedule:\n{frame}")
    });
    set_text(text);
}

/// Where the text buffer's UTF-8 bytes start in the module's memory.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn text_ptr() -> *const u8 {
    TEXT.with_borrow(|t| t.as_ptr())
}

/// The text buffer's length in bytes.
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn text_len() -> u32 {
    TEXT.with_borrow(|t| t.len() as u32)
}

/// The text buffer, as Rust sees it (what [`text_ptr`] and [`text_len`]
/// hand to JavaScript).
pub fn text() -> String {
    TEXT.with_borrow(|t| t.clone())
}
