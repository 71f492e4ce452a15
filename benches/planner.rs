//! How fast the planner prices configurations, natively: prints figures,
//! asserts nothing about time (`cargo bench --bench planner`; `.ci/bench`
//! runs it beside the page's benchmark).

use membudget::detailed::plan::planner::make_it_fit;
use membudget::detailed::plan::search::search;
use membudget::detailed::time::hardware::gpu;
use membudget::detailed::time::steptime::{step_time, Cluster, Efficiency};
use membudget::detailed::{preset, timeline, AttentionKernel, DetailedConfig, StepOptions};
use std::time::Instant;

/// Runs `f` until a second has passed (at least 5 times); the median time
/// of one run, in seconds.
fn median(mut f: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || start.elapsed().as_secs_f64() < 1.0 {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let gib = (1u64 << 30) as f64;
    println!("membudget planner benchmark (native, release, one core)");
    for (name, seq, card) in [
        ("llama-3.1-8b", 8192, 80.0),
        ("llama-3.1-70b", 8192, 80.0),
        ("llama-3.1-405b", 8192, 141.0),
    ] {
        let cfg = DetailedConfig {
            attention: AttentionKernel::Flash,
            dropout: false,
            ..DetailedConfig::new(preset(name).unwrap().arch, seq, 1)
        };
        let one = median(|| {
            std::hint::black_box(timeline(&cfg, &StepOptions::default()).unwrap());
        });
        let mut rows = 0;
        let plan = median(|| {
            rows = make_it_fit(&cfg, card * gib, None, None).changes.len();
        });
        // The planner prices each lever and every pair of levers that do not
        // fit alone: up to 11 + 55 step peaks.
        println!(
            "  {name:>15}, {seq} tokens, {card} GiB: one step peak {:.1} µs ({:.0} configurations/s); make it fit {:.2} ms ({rows} rows)",
            one * 1e6,
            1.0 / one,
            plan * 1e3,
        );
    }
    // The step-time model, and --plan's search over every layout.
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let eff = Efficiency::for_gpu(&h100.gpu);
    for (name, seq, batch, gpus) in [
        ("llama-3.1-8b", 8192, 64, 8),
        ("llama-3.1-70b", 4096, 256, 64),
    ] {
        let cfg = DetailedConfig {
            attention: AttentionKernel::Flash,
            dropout: false,
            ..DetailedConfig::new(preset(name).unwrap().arch, seq, batch)
        };
        let one = median(|| {
            std::hint::black_box(step_time(&cfg, &h100, &eff));
        });
        let (mut tried, mut fit) = (0, 0);
        let plan = median(|| {
            let s = search(&cfg, &h100, gpus, None, &eff);
            (tried, fit) = (s.tried, s.rows.len());
        });
        println!(
            "  {name:>15}, {seq} tokens, batch {batch}, {gpus} × H100: one step time {:.2} µs; --plan {:.1} ms ({tried} layouts, {:.0} per second; {fit} fit)",
            one * 1e6,
            plan * 1e3,
            tried as f64 / plan,
        );
    }
}
