//! What the page's JavaScript gives the module: a clock and a console.
//!
//! Two imported functions, in the import module `mosaic`:
//! `now_ms() -> f64` (`performance.now()`) and `print(ptr, len)` (a UTF-8
//! message in the module's memory, shown with `console.error`). Built
//! natively (for clippy and the docs), they are std's clock and stderr.

use std::time::Duration;

#[cfg(target_family = "wasm")]
#[allow(
    unsafe_code,
    reason = "the two functions the page's JavaScript provides"
)]
mod imports {
    #[link(wasm_import_module = "mosaic")]
    unsafe extern "C" {
        fn now_ms() -> f64;
        fn print(ptr: *const u8, len: usize);
    }

    pub fn now_ms_() -> f64 {
        // SAFETY: `performance.now()` behind it; no arguments.
        unsafe { now_ms() }
    }

    pub fn print_(text: &str) {
        // SAFETY: the glue only reads `len` bytes at `ptr` from this
        // module's memory, during the call.
        unsafe { print(text.as_ptr(), text.len()) }
    }
}

#[cfg(not(target_family = "wasm"))]
mod imports {
    use std::sync::OnceLock;
    use std::time::Instant;

    pub fn now_ms_() -> f64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
    }

    pub fn print_(text: &str) {
        eprintln!("{text}");
    }
}

/// The page's clock: `performance.now()`, as time since the page loaded.
///
/// ```
/// let (a, b) = (mosaic_web::host::now(), mosaic_web::host::now());
/// assert!(b >= a);
/// ```
pub fn now() -> std::time::Duration {
    Duration::from_secs_f64(imports::now_ms_().max(0.0) / 1000.0)
}

/// Writes `text` to the browser's console (stderr natively).
///
/// ```
/// mosaic_web::host::print("hello");
/// ```
pub fn print(text: &str) {
    imports::print_(text);
}

/// Installs the page's clock as mosaic's ([`mosaic::set_clock`]) and a
/// panic hook that prints the message before the module traps (wasm32
/// aborts on panic, and the message would be lost). Idempotent.
///
/// ```
/// mosaic_web::host::install();
/// mosaic_web::host::install(); // the second call changes nothing
/// ```
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Only fails if some other code installed a clock first: keep it.
        let _ = mosaic::set_clock(now);
        std::panic::set_hook(Box::new(|info| print(&format!("panic: {info}"))));
    });
}
