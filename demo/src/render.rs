//! Pictures: a small software rasteriser into an RGB buffer, and the PNG
//! and GIF writers.
//!
//! The [`Renderer`] keeps one cached `QueryState` per kind of thing it
//! draws and reads the world through them: scenery (`Position +
//! Appearance`), lights (`Position + Light`, drawn additively so they
//! glow), and sprites (`Position + Sprite`: monsters red, the player blue,
//! a ghost translucent). The camera follows the player across a large
//! arena. GIF frames use one fixed 252-colour palette with ordered
//! dithering, so encoding is fast and the file is the same on every run.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use mosaic::prelude::*;

use crate::components::*;
use crate::resources::{Arena, GROUND};

/// An RGB picture, row by row from the top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canvas {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    /// A black picture.
    pub fn new(width: usize, height: usize) -> Canvas {
        Canvas {
            width,
            height,
            rgb: vec![0; width * height * 3],
        }
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The pixels: `width * height` RGB triples, top row first.
    pub fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    /// The colour at `(x, y)`, if inside.
    pub fn pixel(&self, x: usize, y: usize) -> Option<[u8; 3]> {
        (x < self.width && y < self.height).then(|| {
            let i = (y * self.width + x) * 3;
            [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
        })
    }

    fn index(&self, x: i32, y: i32) -> Option<usize> {
        (x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height)
            .then(|| (y as usize * self.width + x as usize) * 3)
    }

    /// Paints `color` over `(x, y)` with opacity `alpha` (0 to 1).
    fn blend(&mut self, x: i32, y: i32, color: [u8; 3], alpha: f32) {
        if let Some(i) = self.index(x, y) {
            for (dst, src) in self.rgb[i..i + 3].iter_mut().zip(color) {
                *dst = (*dst as f32 + (src as f32 - *dst as f32) * alpha) as u8;
            }
        }
    }

    /// Adds light to `(x, y)`, saturating.
    fn add(&mut self, x: i32, y: i32, light: [f32; 3]) {
        if let Some(i) = self.index(x, y) {
            for (dst, add) in self.rgb[i..i + 3].iter_mut().zip(light) {
                *dst = (*dst as f32 + add).min(255.0) as u8;
            }
        }
    }

    /// Fills the rectangle `x0..x1, y0..y1`.
    fn rect(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, color: [u8; 3], alpha: f32) {
        for y in y0.max(0)..y1.min(self.height as i32) {
            for x in x0.max(0)..x1.min(self.width as i32) {
                self.blend(x, y, color, alpha);
            }
        }
    }

    /// Fills the triangle with apex `(x, top)` and base `x - half..x + half`
    /// on row `base` (screen rows grow downwards, so `top < base`).
    fn triangle(&mut self, x: f32, top: f32, base: f32, half: f32, color: [u8; 3]) {
        let height = (base - top).max(1.0);
        for row in top.ceil() as i32..=base.floor() as i32 {
            let w = half * (row as f32 - top) / height;
            for col in (x - w).round() as i32..=(x + w).round() as i32 {
                self.blend(col, row, color, 1.0);
            }
        }
    }

    /// Fills the disc of radius `r` around `(x, y)`; `top_half` keeps only
    /// the upper half.
    fn disc(&mut self, x: f32, y: f32, r: f32, color: [u8; 3], alpha: f32, top_half: bool) {
        let reach = r.ceil() as i32;
        let (cx, cy) = (x.round() as i32, y.round() as i32);
        let bottom = if top_half { 0 } else { reach };
        for dy in -reach..=bottom {
            for dx in -reach..=reach {
                if (dx * dx + dy * dy) as f32 <= r * r {
                    self.blend(cx + dx, cy + dy, color, alpha);
                }
            }
        }
    }

    /// Writes `text` (upper case, digits, `.:-/`) with its top-left corner
    /// at `(x, y)`, over a one-pixel shadow.
    fn text(&mut self, x: i32, y: i32, text: &str, color: [u8; 3]) {
        for (n, ch) in text.chars().enumerate() {
            let Some(rows) = glyph(ch) else { continue };
            let left = x + n as i32 * 4;
            for (dy, bits) in rows.iter().enumerate() {
                for dx in 0..3 {
                    if bits & (0b100 >> dx) != 0 {
                        let (px, py) = (left + dx, y + dy as i32);
                        self.blend(px + 1, py + 1, [0, 0, 0], 0.7);
                        self.blend(px, py, color, 1.0);
                    }
                }
            }
        }
    }
}

/// A 3x5 pixel font: five rows of three bits.
fn glyph(ch: char) -> Option<[u8; 5]> {
    Some(match ch.to_ascii_uppercase() {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b010, 0b010, 0b010],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        'A' => [0b010, 0b101, 0b111, 0b101, 0b101],
        'B' => [0b110, 0b101, 0b110, 0b101, 0b110],
        'C' => [0b011, 0b100, 0b100, 0b100, 0b011],
        'D' => [0b110, 0b101, 0b101, 0b101, 0b110],
        'E' => [0b111, 0b100, 0b110, 0b100, 0b111],
        'F' => [0b111, 0b100, 0b110, 0b100, 0b100],
        'G' => [0b011, 0b100, 0b101, 0b101, 0b011],
        'H' => [0b101, 0b101, 0b111, 0b101, 0b101],
        'I' => [0b111, 0b010, 0b010, 0b010, 0b111],
        'J' => [0b001, 0b001, 0b001, 0b101, 0b010],
        'K' => [0b101, 0b101, 0b110, 0b101, 0b101],
        'L' => [0b100, 0b100, 0b100, 0b100, 0b111],
        'M' => [0b101, 0b111, 0b111, 0b101, 0b101],
        'N' => [0b110, 0b101, 0b101, 0b101, 0b101],
        'O' => [0b010, 0b101, 0b101, 0b101, 0b010],
        'P' => [0b110, 0b101, 0b110, 0b100, 0b100],
        'Q' => [0b010, 0b101, 0b101, 0b110, 0b011],
        'R' => [0b110, 0b101, 0b110, 0b101, 0b101],
        'S' => [0b011, 0b100, 0b010, 0b001, 0b110],
        'T' => [0b111, 0b010, 0b010, 0b010, 0b010],
        'U' => [0b101, 0b101, 0b101, 0b101, 0b111],
        'V' => [0b101, 0b101, 0b101, 0b101, 0b010],
        'W' => [0b101, 0b101, 0b111, 0b111, 0b101],
        'X' => [0b101, 0b101, 0b010, 0b101, 0b101],
        'Y' => [0b101, 0b101, 0b010, 0b010, 0b010],
        'Z' => [0b111, 0b001, 0b010, 0b100, 0b111],
        '.' => [0, 0, 0, 0, 0b010],
        ':' => [0, 0b010, 0, 0b010, 0],
        '-' => [0, 0, 0b111, 0, 0],
        '/' => [0b001, 0b001, 0b010, 0b100, 0b100],
        _ => return None,
    })
}

/// What the picture shows besides the world: the frame and whether input
/// is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hud {
    /// Frame number.
    pub frame: u64,
    /// Whether the `input` system is on.
    pub input_on: bool,
}

/// Maps world coordinates to the picture.
#[derive(Clone, Copy, Debug)]
struct Camera {
    x: f32,
    y: f32,
    height: f32,
}

impl Camera {
    fn to_screen(self, x: f32, y: f32) -> (f32, f32) {
        (x - self.x, self.height - 1.0 - (y - self.y))
    }
}

type SpriteQuery = (
    &'static Position,
    &'static Sprite,
    Has<Player>,
    Has<AI>,
    Has<Health>,
    Has<Ghost>,
);

/// Draws the world into a [`Canvas`]; see the module docs.
pub struct Renderer {
    scenery: QueryState<(&'static Position, &'static Appearance)>,
    lights: QueryState<(&'static Position, &'static Light)>,
    sprites: QueryState<SpriteQuery>,
    player: QueryState<(&'static Position, &'static Health, Option<&'static Ghost>), With<Player>>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer").finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer for `world` (its queries are registered there).
    pub fn new(world: &mut World) -> Renderer {
        Renderer {
            scenery: world.query(),
            lights: world.query(),
            sprites: world.query(),
            player: world.query_filtered(),
        }
    }

    /// Draws the whole picture.
    pub fn draw(&mut self, world: &World, hud: Hud, canvas: &mut Canvas) {
        let arena = world.get_resource::<Arena>().copied().unwrap_or_default();
        let (w, h) = (canvas.width as f32, canvas.height as f32);
        let player = self
            .player
            .iter(world)
            .next()
            .map(|(p, hp, g)| (*p, *hp, g.copied()));
        let focus = player.map_or(
            Position {
                x: w / 2.0,
                y: h / 2.0,
            },
            |(p, _, _)| p,
        );
        let camera = Camera {
            x: (focus.x - w / 2.0).clamp(0.0, (arena.width - w).max(0.0)),
            y: (focus.y - h / 3.0).clamp(0.0, (arena.height - h).max(0.0)),
            height: h,
        };
        background(canvas, camera);
        self.draw_scenery(world, camera, canvas);
        self.draw_lights(world, camera, canvas);
        self.draw_sprites(world, camera, hud.frame, canvas);
        draw_hud(canvas, hud, player.map(|(_, hp, g)| (hp, g)));
    }

    fn draw_scenery(&mut self, world: &World, camera: Camera, canvas: &mut Canvas) {
        for (pos, look) in self.scenery.iter(world) {
            let (x, y) = camera.to_screen(pos.x, pos.y);
            if x < -20.0
                || x > canvas.width as f32 + 20.0
                || y < 0.0
                || y > canvas.height as f32 + 40.0
            {
                continue;
            }
            match look.name.as_str() {
                "tree" => {
                    let (xi, yi) = (x.round() as i32, y.round() as i32);
                    canvas.rect(xi - 2, yi - 8, xi + 2, yi, [90, 60, 30], 1.0);
                    canvas.triangle(x, y - 22.0, y - 6.0, 11.0, [25, 105, 45]);
                    canvas.triangle(x, y - 30.0, y - 15.0, 8.5, [35, 130, 55]);
                    canvas.triangle(x, y - 37.0, y - 24.0, 6.0, [50, 155, 70]);
                }
                "rock" => {
                    canvas.disc(x, y, 6.0, [105, 105, 118], 1.0, true);
                    canvas.disc(x - 2.0, y - 3.0, 1.5, [150, 150, 165], 1.0, false);
                }
                _ => canvas.rect(
                    x as i32 - 3,
                    y as i32 - 6,
                    x as i32 + 3,
                    y as i32,
                    [255, 0, 255],
                    1.0,
                ),
            }
        }
    }

    fn draw_lights(&mut self, world: &World, camera: Camera, canvas: &mut Canvas) {
        let (w, h) = (canvas.width as f32, canvas.height as f32);
        for (pos, light) in self.lights.iter(world) {
            let (x, y) = camera.to_screen(pos.x, pos.y);
            let r = light.radius * (1.0 + light.flare);
            if x < -r || y < -r || x > w + r || y > h + r {
                continue;
            }
            let strength = 0.55 + 1.6 * light.flare;
            let reach = r.ceil() as i32;
            let (cx, cy) = (x.round() as i32, y.round() as i32);
            for dy in -reach..=reach {
                for dx in -reach..=reach {
                    let d = ((dx * dx + dy * dy) as f32).sqrt();
                    if d >= r {
                        continue;
                    }
                    let k = (1.0 - d / r).powi(2) * strength;
                    let c = light.color.map(|c| c as f32 * k);
                    canvas.add(cx + dx, cy + dy, c);
                }
            }
        }
    }

    /// Draws every sprite, the player last (on top).
    fn draw_sprites(&mut self, world: &World, camera: Camera, frame: u64, canvas: &mut Canvas) {
        for players in [false, true] {
            for (pos, sprite, is_player, has_ai, has_health, ghost) in self.sprites.iter(world) {
                if is_player != players {
                    continue;
                }
                let (x, y) = camera.to_screen(pos.x, pos.y);
                let half = sprite.size / 2.0;
                if x < -half
                    || y < -half
                    || x > canvas.width as f32 + half
                    || y > canvas.height as f32 + half
                {
                    continue;
                }
                if is_player || (has_ai && has_health) {
                    character(canvas, x, y, half, sprite.color, ghost, frame);
                } else if has_ai {
                    // A wisp: a soft, see-through ball.
                    canvas.disc(x, y, half, sprite.color, 0.7, false);
                } else {
                    // A power-up: a pulsing diamond.
                    let pulse = 1.0 + 0.25 * (frame as f32 * 0.3).sin();
                    let r = (half * pulse) as i32;
                    let (cx, cy) = (x.round() as i32, y.round() as i32);
                    for dy in -r..=r {
                        let span = r - dy.abs();
                        for dx in -span..=span {
                            canvas.blend(cx + dx, cy + dy, sprite.color, 1.0);
                        }
                    }
                }
            }
        }
    }
}

/// A monster or the player: a rounded body with eyes. A ghost is pale,
/// see-through and shimmers.
fn character(
    canvas: &mut Canvas,
    x: f32,
    y: f32,
    half: f32,
    color: [u8; 3],
    ghost: bool,
    frame: u64,
) {
    let (x0, y0) = ((x - half).round() as i32, (y - half).round() as i32);
    let (x1, y1) = ((x + half).round() as i32, (y + half).round() as i32);
    let (color, alpha) = if ghost {
        let shimmer = 0.45 + 0.15 * (frame as f32 * 0.5).sin();
        (mix(color, [200, 240, 255], 0.65), shimmer)
    } else {
        (color, 1.0)
    };
    if ghost {
        // A cold glow around the body.
        for yy in y0 - 2..y1 + 2 {
            for xx in x0 - 2..x1 + 2 {
                let outside = xx < x0 || xx >= x1 || yy < y0 || yy >= y1;
                if outside {
                    canvas.add(xx, yy, [25.0, 45.0, 60.0]);
                }
            }
        }
    }
    canvas.rect(x0, y0 + 1, x1, y1, color, alpha);
    canvas.rect(x0 + 1, y0, x1 - 1, y0 + 1, color, alpha);
    let eye_y = y0 + (y1 - y0) / 3;
    for eye_x in [x0 + (x1 - x0) / 4, x1 - (x1 - x0) / 4 - 2] {
        canvas.rect(
            eye_x,
            eye_y,
            eye_x + 2,
            eye_y + 2,
            [255, 255, 255],
            alpha.max(0.8),
        );
        canvas.blend(eye_x + 1, eye_y + 1, [10, 10, 20], alpha.max(0.8));
    }
}

fn mix(a: [u8; 3], b: [u8; 3], t: f32) -> [u8; 3] {
    [0, 1, 2].map(|i| (a[i] as f32 + (b[i] as f32 - a[i] as f32) * t) as u8)
}

/// Night sky above the ground line, earth below it.
fn background(canvas: &mut Canvas, camera: Camera) {
    let (w, h) = (canvas.width, canvas.height);
    for row in 0..h {
        let world_y = camera.y + (h - 1 - row) as f32;
        let color = if world_y < GROUND - 2.0 {
            [40, 30, 22]
        } else if world_y < GROUND {
            [40, 90, 40]
        } else {
            mix([8, 10, 30], [50, 32, 72], row as f32 / h as f32)
        };
        for px in canvas.rgb[row * w * 3..(row + 1) * w * 3].chunks_exact_mut(3) {
            px.copy_from_slice(&color);
        }
    }
}

fn draw_hud(canvas: &mut Canvas, hud: Hud, player: Option<(Health, Option<Ghost>)>) {
    if let Some((health, ghost)) = player {
        canvas.text(4, 4, "HP", [255, 255, 255]);
        canvas.rect(14, 4, 64, 9, [90, 20, 20], 1.0);
        let filled = health.hp.clamp(0, 100) / 2;
        canvas.rect(14, 4, 14 + filled, 9, [60, 200, 80], 1.0);
        if let Some(ghost) = ghost {
            canvas.text(4, 12, "GHOST", [200, 230, 255]);
            let left = (ghost.remaining.as_secs_f32() * 15.0) as i32;
            canvas.rect(26, 12, 26 + left, 17, [200, 230, 255], 0.8);
        }
    }
    let frame = format!("F {}", hud.frame);
    canvas.text(
        canvas.width as i32 - 4 * frame.len() as i32 - 3,
        4,
        &frame,
        [200, 200, 210],
    );
    if !hud.input_on {
        let msg = "INPUT OFF";
        canvas.text(
            canvas.width as i32 / 2 - 2 * msg.len() as i32,
            4,
            msg,
            [255, 150, 60],
        );
    }
}

/// Writes `canvas` as an 8-bit RGB PNG.
pub fn write_png(path: &Path, canvas: &Canvas) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let file = File::create(path).map_err(|e| fail(&e))?;
    let mut encoder = png::Encoder::new(
        BufWriter::new(file),
        canvas.width as u32,
        canvas.height as u32,
    );
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| fail(&e))?;
    writer.write_image_data(&canvas.rgb).map_err(|e| fail(&e))?;
    writer.finish().map_err(|e| fail(&e))
}

/// Levels per channel of the GIF palette (red, green, blue): 6 * 7 * 6 =
/// 252 colours.
const LEVELS: [usize; 3] = [6, 7, 6];

/// 4x4 ordered-dither thresholds.
const BAYER: [[u8; 4]; 4] = [[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]];

/// Writes an animated GIF frame by frame, with a fixed palette.
pub struct GifRecorder {
    encoder: gif::Encoder<BufWriter<File>>,
    path: String,
    indices: Vec<u8>,
    delay: u16,
    frames: usize,
}

impl std::fmt::Debug for GifRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GifRecorder")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl GifRecorder {
    /// Starts a looping GIF of `width` by `height` at `path`, showing each
    /// frame for `delay` hundredths of a second.
    pub fn create(path: &Path, width: usize, height: usize, delay: u16) -> Result<Self, String> {
        let shown = path.display().to_string();
        let fail = |e: &dyn std::fmt::Display| format!("cannot write {shown}: {e}");
        let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
            return Err(format!("{width}x{height} is too large for a GIF"));
        };
        let file = File::create(path).map_err(|e| fail(&e))?;
        let mut encoder =
            gif::Encoder::new(BufWriter::new(file), w, h, &palette()).map_err(|e| fail(&e))?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| fail(&e))?;
        Ok(GifRecorder {
            encoder,
            path: shown,
            indices: Vec::with_capacity(width * height),
            delay,
            frames: 0,
        })
    }

    /// Appends a frame.
    pub fn add(&mut self, canvas: &Canvas) -> Result<(), String> {
        self.indices.clear();
        for (i, px) in canvas.rgb.chunks_exact(3).enumerate() {
            let (x, y) = (i % canvas.width, i / canvas.width);
            let t = (BAYER[y & 3][x & 3] as f32 + 0.5) / 16.0;
            let q = [0, 1, 2].map(|c| {
                let top = LEVELS[c] - 1;
                ((px[c] as f32 * top as f32 / 255.0 + t) as usize).min(top)
            });
            self.indices
                .push(((q[0] * LEVELS[1] + q[1]) * LEVELS[2] + q[2]) as u8);
        }
        let frame = gif::Frame {
            width: canvas.width as u16,
            height: canvas.height as u16,
            delay: self.delay,
            buffer: std::borrow::Cow::Borrowed(&self.indices),
            ..gif::Frame::default()
        };
        self.encoder
            .write_frame(&frame)
            .map_err(|e| format!("cannot write {}: {e}", self.path))?;
        self.frames += 1;
        Ok(())
    }

    /// Finishes the file; returns the number of frames.
    pub fn finish(self) -> Result<usize, String> {
        let frames = self.frames;
        let path = self.path;
        self.encoder
            .into_inner()
            .and_then(|mut w| std::io::Write::flush(&mut w).map_err(Into::into))
            .map_err(|e| format!("cannot write {path}: {e}"))?;
        Ok(frames)
    }
}

/// The fixed palette: every combination of [`LEVELS`], padded to 256.
fn palette() -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * 3);
    for r in 0..LEVELS[0] {
        for g in 0..LEVELS[1] {
            for b in 0..LEVELS[2] {
                for (v, n) in [(r, LEVELS[0]), (g, LEVELS[1]), (b, LEVELS[2])] {
                    out.push((v * 255 / (n - 1)) as u8);
                }
            }
        }
    }
    out.resize(256 * 3, 0);
    out
}
