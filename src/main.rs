fn main() {
    std::process::exit(dlqctl::cli::main());
}
