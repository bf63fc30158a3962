//! The font the plots' text is drawn with: a TrueType font read at run
//! time ([`FONT_PATHS`]: Debian's `fonts-dejavu-core`), so that no font
//! is built into the binaries.

use std::path::Path;

use plotters::style::FontStyle;

/// Where a sans-serif TrueType font is looked for.
pub const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// The family name the plots ask for.
pub const FAMILY: &str = "sans-serif";

/// No font could be loaded for the plots' text.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct FontError(String);

/// Loads the font for the plots' text, once per process.
pub fn load_font() -> Result<(), FontError> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let path = FONT_PATHS
                .iter()
                .find(|p| Path::new(p).is_file())
                .ok_or_else(|| {
                    format!(
                        "no font for the plots' text (looked for {}; apt-get install \
                         fonts-dejavu-core)",
                        FONT_PATHS.join(", ")
                    )
                })?;
            let bytes = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
            // plotters keeps the font for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font(FAMILY, FontStyle::Normal, bytes)
                .map_err(|_| format!("{path} is not a font plotters can read"))
        })
        .clone()
        .map_err(FontError)
}
