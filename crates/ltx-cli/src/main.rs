//! The `ltx` command.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use ltx_cli::{end_quietly_on_closed_stdout, exit};

mod addr;
mod cp;
mod demo;
mod docgen;
mod emu;
mod file_lines;
mod keys;
mod plot;
mod recv;
mod send;
mod sim;
mod sim_soak;
mod tunnel;

/// ltx: a loss-tolerant reliable transport.
#[derive(Debug, Parser)]
#[command(name = "ltx", version, about, after_help = exit::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell).
    Completions(docgen::CompletionsArgs),
    /// Copy files to or from a host reached over ssh, which starts ltx
    /// there with one-time keys; the data goes over UDP (port 7000).
    Cp(cp::CpArgs),
    /// Transfer a generated payload over an emulated lossy long-delay path
    /// on loopback (no root, no configuration) and show how it went.
    Demo(demo::DemoArgs),
    /// Emulate a path between two network namespaces in real time (root).
    Emu(emu::EmuArgs),
    /// Make a key pair for `ltx recv` / `ltx send` (--key): writes the
    /// private key to a new file (mode 0600) and prints the public key.
    Keygen(keys::KeygenArgs),
    /// Write the manual pages (ltx.1 and one per subcommand).
    Man(docgen::ManArgs),
    /// Draw a qlog trace (from `--qlog`) as stacked time series: rates,
    /// window, RTT, loss and redundancy, symbols, repairs.
    Plot(plot::PlotArgs),
    /// Receive files from `ltx send`.
    Recv(recv::RecvArgs),
    /// Send files to `ltx recv` (resumes a partial file from an earlier run).
    Send(send::SendArgs),
    /// Run the deterministic simulator.
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// Carry TCP connections over ltx: port forwards and SOCKS5 through a
    /// tunnel server that connects only what it permits.
    #[command(subcommand)]
    Tunnel(tunnel::TunnelCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Completions(args) => docgen::completions(&args, Cli::command()),
        Command::Cp(args) => cp::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Emu(args) => emu::run(&args),
        Command::Keygen(args) => keys::run_keygen(&args),
        Command::Man(args) => docgen::man(&args, Cli::command()),
        Command::Plot(args) => plot::run(&args),
        Command::Recv(args) => recv::run(&args),
        Command::Send(args) => send::run(&args),
        Command::Sim(command) => {
            end_quietly_on_closed_stdout();
            sim::run(command)
        }
        Command::Tunnel(command) => tunnel::run(&command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::Failure::of(&e).code()
        }
    }
}
