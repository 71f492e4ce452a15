//! The chart drawn off-browser into SVG: the same `draw` the page runs.

use membudget::budget::{estimate, Term, TrainingConfig};
use membudget::chart::{draw, term_colour_hex, Bar, ChartStyle};
use plotters::prelude::*;

fn render(cfg: &TrainingConfig) -> String {
    let b = estimate(cfg).unwrap();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, (720, 360)).into_drawing_area();
        draw(
            &area,
            &[Bar {
                label: "Current",
                breakdown: &b,
            }],
            &ChartStyle::default(),
        )
        .unwrap();
    }
    svg
}

/// Height in pixels of the filled rectangle of `colour` (the bar segment).
fn segment_height(svg: &str, term: Term) -> Option<f64> {
    let fill = format!("fill=\"{}\"", term_colour_hex(term).to_uppercase());
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&fill))
        .filter_map(|l| {
            let h = l.split("height=\"").nth(1)?.split('"').next()?;
            h.parse::<f64>().ok()
        })
        // The legend swatch is 14 px; the bar segment is the other one.
        .rfind(|&h| h != 14.0)
}

#[test]
fn lesson_bar_has_five_segments_legend_and_total() {
    let svg = render(&TrainingConfig::default());
    for term in Term::ALL {
        assert!(
            segment_height(&svg, term).is_some(),
            "no segment for {term:?}"
        );
    }
    assert!(
        svg.contains("Activations  73.0 GB"),
        "legend figure missing"
    );
    assert!(svg.contains("Master weights  28.0 GB"));
    assert!(svg.contains("185.0 GB"), "total label missing");
    assert!(svg.contains("200 GB"), "axis top missing");
    // Segments are in proportion: optimizer state (56) is 4 x parameters (14).
    let p = segment_height(&svg, Term::Params).unwrap();
    let o = segment_height(&svg, Term::OptimizerState).unwrap();
    // Both edges of each segment are rounded to whole pixels.
    assert!((o - 4.0 * p).abs() <= 5.0, "{o} vs 4 x {p}");
}

#[test]
fn doubling_batch_grows_only_the_activation_segment() {
    // Batch 1 and 2 total 130.3 and 148.6 GB: one axis (150 GB) for both.
    let base = TrainingConfig::default();
    let small = render(&TrainingConfig { batch: 1, ..base });
    let large = render(&TrainingConfig { batch: 2, ..base });
    let act_s = segment_height(&small, Term::Activations).unwrap();
    let act_l = segment_height(&large, Term::Activations).unwrap();
    assert!(
        act_l > act_s * 1.9 && act_l < act_s * 2.1,
        "{act_s} -> {act_l}"
    );
    for term in [
        Term::Params,
        Term::Grads,
        Term::MasterWeights,
        Term::OptimizerState,
    ] {
        assert_eq!(
            segment_height(&small, term),
            segment_height(&large, term),
            "{term:?}"
        );
    }
}

#[test]
fn fp32_draws_no_master_weight_segment() {
    let svg = render(&TrainingConfig {
        mixed_precision: false,
        ..TrainingConfig::default()
    });
    assert_eq!(segment_height(&svg, Term::MasterWeights), None);
    assert!(svg.contains("Master weights  0.0 GB"));
}
