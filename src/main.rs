//! `docdex`: the command line. Everything lives in the library; see `docdex::cli`.
fn main() -> std::process::ExitCode {
    docdex::cli::main()
}
