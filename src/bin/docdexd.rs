//! `docdexd`: the same command line under the name the specs use.
fn main() -> std::process::ExitCode {
    docdex::cli::main()
}
