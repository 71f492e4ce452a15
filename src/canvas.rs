//! Charts on a `<canvas>`: a plotters [`DrawingBackend`] over the 2D
//! context that sets each piece of drawing state only when it changes, and
//! [`paint`], which sizes a canvas to its box and draws a chart on it. Both
//! the light lesson page and the full calculator draw through it.
//!
//! Why not `plotters-canvas`: its backend sets the fill colour, the font,
//! the text alignment and the baseline again before every text and every
//! rectangle, each a string built in Rust and decoded by the browser. A
//! chart sets the same few fonts and colours dozens of times; keeping the
//! last value and skipping repeats took those calls off every slider input
//! (README "Benchmark" has the measured figures).

use crate::chart::{draw, ChartSpec, ChartStyle};
use plotters::prelude::IntoDrawingArea;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontFamily, FontStyle,
};
use wasm_bindgen::prelude::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// A canvas and its 2D context, looked up once and kept for every draw.
#[derive(Clone)]
pub struct Surface {
    canvas: HtmlCanvasElement,
    context: CanvasRenderingContext2d,
}

impl Surface {
    /// The canvas's 2D context; `None` if the browser gives none.
    pub fn new(canvas: HtmlCanvasElement) -> Option<Self> {
        let context = canvas.get_context("2d").ok()??.dyn_into().ok()?;
        Some(Self { canvas, context })
    }

    /// The canvas element.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.canvas
    }
}

/// Calls `on_size` with the canvas's box in CSS pixels whenever it changes
/// size (a `ResizeObserver`): the first time soon after it is laid out, then
/// on a window resize, a scrollbar appearing, a hidden panel shown. Reading
/// `clientWidth` at every draw instead forced the browser to lay the page
/// out each time (0.8 ms of every slider input). Observes for the page's
/// life, like the canvas.
pub fn observe_size(canvas: &HtmlCanvasElement, on_size: impl Fn((f64, f64)) + 'static) {
    let on_resize = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
        if let Ok(entry) = entries.get(0).dyn_into::<web_sys::ResizeObserverEntry>() {
            let rect = entry.content_rect();
            on_size((rect.width(), rect.height()));
        }
    });
    if let Ok(observer) = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()) {
        observer.observe(canvas);
    }
    on_resize.forget();
}

/// Draws `spec` on `surface`'s canvas, in dark or light colours, sized to
/// its box of `css` CSS pixels at the screen's pixel density (crisp on
/// high-DPI screens). A box not known yet (`(0, 0)`: before the size
/// observer's first report, the first draw straight after mounting) is
/// measured here and written back, so the first chart is not a frame late.
pub fn paint(surface: &Surface, css: &mut (f64, f64), spec: &ChartSpec, dark: bool) {
    if *css == (0.0, 0.0) {
        *css = (
            f64::from(surface.canvas.client_width()),
            f64::from(surface.canvas.client_height()),
        );
    }
    let scale = web_sys::window()
        .map_or(1.0, |w| w.device_pixel_ratio())
        .max(1.0);
    paint_with(surface, *css, spec, &ChartStyle { scale, dark }, true);
}

/// Sizes `surface`'s canvas to a box of `css` pixels at `style.scale`
/// device pixels each and draws `spec` on it, with rectangles of one colour
/// batched into one fill (`batch`, as [`paint`] draws) or filled one by
/// one (the tests compare the two). A canvas is resized only when its box
/// changed (resizing reallocates and clears it); nothing is drawn in a box
/// under one pixel (hidden).
#[doc(hidden)]
pub fn paint_with(
    surface: &Surface,
    css: (f64, f64),
    spec: &ChartSpec,
    style: &ChartStyle,
    batch: bool,
) {
    let (css_w, css_h) = css;
    if css_w < 1.0 || css_h < 1.0 {
        return;
    }
    let canvas = &surface.canvas;
    let (w, h) = (
        (css_w * style.scale).round() as u32,
        (css_h * style.scale).round() as u32,
    );
    if canvas.width() != w {
        canvas.set_width(w);
    }
    if canvas.height() != h {
        canvas.set_height(h);
    }
    let mut backend = Backend::new(surface, (w, h));
    backend.batching = batch;
    let area = backend.into_drawing_area();
    // The backend's calls cannot fail, and plotters' own errors (a backend
    // shared by two areas at once) cannot arise for one area drawn alone.
    let _ = draw(&area, spec, style);
    // Fills the last batch of rectangles.
    let _ = area.present();
}

/// The context's drawing state as last set, so that equal values are not
/// set again. `None`: not set during this draw yet.
#[derive(Default)]
struct Set {
    fill: Option<(u8, u8, u8, u64)>,
    stroke: Option<(u8, u8, u8, u64)>,
    line_width: Option<u32>,
    font: Option<(u64, &'static str, &'static str)>,
    /// Text alignment and baseline.
    anchor: Option<(&'static str, &'static str)>,
    /// Filled rectangles in the current fill colour, not filled yet (see
    /// [`Backend::flush`]): x, y, width, height.
    batch: Vec<[f64; 4]>,
}

/// The plotters backend (see the module's doc). It draws what the chart
/// uses, rectangles, paths and text, with the canvas's own calls; other
/// shapes (polygons, circles) fall back to plotters' defaults, built on
/// those.
pub struct Backend {
    context: CanvasRenderingContext2d,
    size: (u32, u32),
    set: Set,
    /// Whether filled rectangles are batched (see [`Backend::flush`]).
    batching: bool,
}

impl Backend {
    fn new(surface: &Surface, size: (u32, u32)) -> Self {
        Self {
            context: surface.context.clone(),
            size,
            set: Set::default(),
            batching: true,
        }
    }

    fn fill(&mut self, c: BackendColor) {
        let key = colour_key(c);
        if self.set.fill != Some(key) {
            self.context.set_fill_style_str(&css_colour(c));
            self.set.fill = Some(key);
        }
    }

    /// Fills the batch of rectangles, if any. Filled rectangles of one
    /// colour in a row (the chart draws its segments colour by colour: the
    /// step timeline's 121 are a few batches) are drawn as one path filled
    /// once, before anything else is drawn: one fill instead of one call
    /// per rectangle. The pixels are the same as long as the rectangles do
    /// not overlap (a translucent colour painted twice would be darker),
    /// which the chart's never do: its segments tile the bars, on whole
    /// pixels (`tests/web.rs` compares the two ways of drawing).
    fn flush(&mut self) {
        match self.set.batch[..] {
            [] => return,
            [[x, y, w, h]] => self.context.fill_rect(x, y, w, h),
            _ => {
                self.context.begin_path();
                for &[x, y, w, h] in &self.set.batch {
                    self.context.rect(x, y, w, h);
                }
                self.context.fill();
            }
        }
        self.set.batch.clear();
    }

    fn stroke(&mut self, style: &impl BackendStyle) {
        let key = colour_key(style.color());
        if self.set.stroke != Some(key) {
            self.context
                .set_stroke_style_str(&css_colour(style.color()));
            self.set.stroke = Some(key);
        }
        let width = style.stroke_width();
        if self.set.line_width != Some(width) {
            self.context.set_line_width(f64::from(width));
            self.set.line_width = Some(width);
        }
    }
}

fn colour_key(c: BackendColor) -> (u8, u8, u8, u64) {
    (c.rgb.0, c.rgb.1, c.rgb.2, c.alpha.to_bits())
}

/// `#rrggbb`, or `#rrggbbaa` when translucent (the alpha to 1/255). Not
/// `rgba(r,g,b,a%)`: Chromium takes a percent alpha more slowly, and the
/// hex needs no float formatting in the wasm.
fn css_colour(c: BackendColor) -> String {
    let (r, g, b) = c.rgb;
    if c.alpha >= 1.0 {
        format!("#{r:02x}{g:02x}{b:02x}")
    } else {
        let a = (c.alpha.max(0.0) * 255.0).round() as u8;
        format!("#{r:02x}{g:02x}{b:02x}{a:02x}")
    }
}

impl DrawingBackend for Backend {
    type ErrorType = std::convert::Infallible;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.flush();
        Ok(())
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if color.alpha > 0.0 {
            self.flush();
            self.fill(color);
            self.context
                .fill_rect(f64::from(point.0), f64::from(point.1), 1.0, 1.0);
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.draw_path([from, to], style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let (x, y) = (f64::from(upper_left.0), f64::from(upper_left.1));
        let (w, h) = (
            f64::from(bottom_right.0 - upper_left.0),
            f64::from(bottom_right.1 - upper_left.1),
        );
        let colour = style.color();
        if fill {
            if self.set.fill != Some(colour_key(colour)) {
                self.flush();
                self.fill(colour);
            }
            self.set.batch.push([x, y, w, h]);
            if !self.batching {
                self.flush();
            }
        } else {
            self.flush();
            self.stroke(style);
            self.context.stroke_rect(x, y, w, h);
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let mut path = path.into_iter();
        let Some(first) = path.next() else {
            return Ok(());
        };
        self.flush();
        self.stroke(style);
        self.context.begin_path();
        self.context.move_to(f64::from(first.0), f64::from(first.1));
        for p in path {
            self.context.line_to(f64::from(p.0), f64::from(p.1));
        }
        self.context.stroke();
        Ok(())
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        self.flush();
        let anchor = style.anchor();
        let anchor = (
            match anchor.h_pos {
                HPos::Left => "start",
                HPos::Right => "end",
                HPos::Center => "center",
            },
            match anchor.v_pos {
                VPos::Top => "top",
                VPos::Center => "middle",
                VPos::Bottom => "bottom",
            },
        );
        if self.set.anchor != Some(anchor) {
            self.context.set_text_align(anchor.0);
            self.context.set_text_baseline(anchor.1);
            self.set.anchor = Some(anchor);
        }
        self.fill(colour);
        let size = style.size();
        let slant = match style.style() {
            FontStyle::Normal => "normal",
            FontStyle::Italic => "italic",
            FontStyle::Oblique => "oblique",
            FontStyle::Bold => "bold",
        };
        // The chart names only the generic families.
        let family = match style.family() {
            FontFamily::Serif => "serif",
            FontFamily::Monospace => "monospace",
            _ => "sans-serif",
        };
        let font = (size.to_bits(), slant, family);
        if self.set.font != Some(font) {
            self.context.set_font(&format!("{slant} {size}px {family}"));
            self.set.font = Some(font);
        }
        // The chart draws no rotated text; a transform would be ignored.
        let _ = self
            .context
            .fill_text(text, f64::from(pos.0), f64::from(pos.1));
        Ok(())
    }
}
