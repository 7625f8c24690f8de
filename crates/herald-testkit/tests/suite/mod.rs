mod pty;
mod server;
