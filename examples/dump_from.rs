fn main() {
    for p in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&p).unwrap();
        match membudget::detailed::trainers::read(&p, &text) {
            Ok(r) => println!(
                "{p} [{:?}]: {}",
                r.format,
                r.flags().collect::<Vec<_>>().join(" ")
            ),
            Err(e) => println!("{p}: ERROR {e}"),
        }
    }
}
