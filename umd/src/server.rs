//! Server mode (`-s`): upstream's regression client protocol over TCP.
//!
//! Every message, in both directions, is its length in decimal followed by `\n`, then that
//! many bytes. The client sends a command and the server answers:
//!
//! | command | then the client sends | server replies |
//! | --- | --- | --- |
//! | `GET_WELCOME` | | `Hello World!` |
//! | `QUERY_FLATBUF` | | `YES` if a loadable is cached, else `NO` |
//! | `READ_FLATBUF` | the loadable | nothing (it is cached) |
//! | `RUN_FLATBUF` | | `[OK] Test PASSED!` or `[OK] Test FAILED!` |
//! | `RUN_IMAGE_<name>` | the image file | as `RUN_FLATBUF`, run with that image |
//! | `GET_NUMOUTPUTS` | | the number of outputs of the last run, in decimal |
//! | `GET_OUTPUT` | the output index, in decimal | that output as a `.dimg`, or `0\n` (below) |
//! | `SHUTDOWN` | | `ACK_SHUTDOWN`, and the server exits |
//!
//! Upstream serves port 6666 (here `--port`, default 6666).
//!
//! **One connection, one client.** The loadable a connection reads and the outputs of its
//! runs belong to that connection: they are dropped when it ends, so the next client's
//! `QUERY_FLATBUF` answers `NO`, its `RUN_FLATBUF` fails (`[OK] Test FAILED!`, nothing
//! cached) and its `GET_NUMOUTPUTS` is `0` until it sends its own loadable. Upstream drops
//! the cached loadable at the end of a connection too (its outputs it keeps).
//!
//! **Protocol errors.** The protocol has no error reply:
//! - `GET_OUTPUT` with an index that is not a number, is out of range, or comes before any
//!   successful run is answered with an empty message, `0\n`. That is a protocol error,
//!   not an output: no `.dimg` is empty, and our [`read_message`] refuses it (NVIDIA's
//!   `dla_client.py` accepts it and writes an empty `o_<index>.dimg`). Upstream sends output
//!   0 whatever the index, and crashes before any run.
//! - A malformed message (no size line, a size of 0 or above 512 MiB, a short body) or an
//!   unknown command ends the connection: **the server closes the socket**, so the client
//!   reads end-of-file at once, and the server waits for the next client. Upstream also
//!   abandons the connection and goes back to `accept`, but never closes the socket, which
//!   stays open until the client gives up on its own timeout. A failed run is not a protocol
//!   error: it is answered (`[OK] Test FAILED!`) and the connection goes on.
//!
//! Other differences: an image name is reduced to its file name and stored, for the run
//! only, in a private temporary directory (upstream writes it into the working directory
//! under whatever name the client sent); `GET_OUTPUT` honours the index.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;

use nvdla_port::device::Device;

use crate::app::{infer, AppError, Args};
use crate::dimg::DlaImage;

/// Longest size line accepted (upstream's message buffer).
const MAX_SIZE_LINE: usize = 256;
/// Largest message accepted (upstream's 512 MiB).
pub const MAX_MESSAGE: usize = 1 << 29;

/// Reads one framed message.
pub fn read_message(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    loop {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        if b[0] == b'\n' {
            break;
        }
        line.push(b[0]);
        if line.len() > MAX_SIZE_LINE {
            return Err(bad("no separator after the size"));
        }
    }
    let text = String::from_utf8_lossy(&line);
    let size: usize = text
        .trim()
        .parse()
        .map_err(|_| bad(&format!("size '{text}' is not a number")))?;
    if size == 0 {
        return Err(bad("data size can't be 0"));
    }
    if size > MAX_MESSAGE {
        return Err(bad(&format!("size {size} exceeds {MAX_MESSAGE} bytes")));
    }
    // Grow with what actually arrives: a client that announces 512 MiB and sends nothing
    // costs nothing.
    let mut data = Vec::with_capacity(size.min(1 << 16));
    let got = r.take(size as u64).read_to_end(&mut data)?;
    if got != size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("message ended after {got} of {size} bytes"),
        ));
    }
    Ok(data)
}

/// Writes one framed message.
pub fn write_message(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    w.write_all(format!("{}\n", data.len()).as_bytes())?;
    w.write_all(data)?;
    w.flush()
}

fn bad(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_string())
}

/// The server's state. `loadable` and `outputs` belong to the current connection and are
/// cleared when it starts and when it ends.
struct Session<'a> {
    args: &'a Args,
    dev: &'a mut dyn Device,
    loadable: Option<Vec<u8>>,
    outputs: Vec<DlaImage>,
    image_dir: PathBuf,
    running: bool,
}

impl Session<'_> {
    fn execute(&mut self, image: Option<PathBuf>, log: &mut dyn Write) -> &'static [u8] {
        self.outputs.clear();
        let Some(loadable) = self.loadable.as_deref() else {
            let _ = writeln!(log, "error: no loadable cached (READ_FLATBUF first)");
            return b"[OK] Test FAILED!";
        };
        match infer(
            self.dev,
            loadable,
            image.as_deref(),
            &self.args.image_options(),
            &self.args.run_options(),
            log,
        ) {
            Ok(o) => {
                self.outputs = o.outputs;
                b"[OK] Test PASSED!"
            }
            Err(AppError(e)) => {
                let _ = writeln!(log, "error: {e}");
                b"[OK] Test FAILED!"
            }
        }
    }

    /// Forgets everything a client sent or received: its loadable and its outputs.
    fn forget_client(&mut self) {
        self.loadable = None;
        self.outputs.clear();
    }

    /// Handles one connection until it ends, fails, or shuts the server down; the client's
    /// loadable and outputs do not outlive it.
    fn connection(&mut self, stream: TcpStream, log: &mut dyn Write) -> std::io::Result<()> {
        self.forget_client();
        let result = self.commands(stream, log);
        self.forget_client();
        result
    }

    /// The command loop of one connection. An `Err` ends the connection (the stream is
    /// dropped, which closes the socket).
    fn commands(&mut self, stream: TcpStream, log: &mut dyn Write) -> std::io::Result<()> {
        let mut w = stream.try_clone()?;
        let mut r = BufReader::new(stream);
        while self.running {
            let cmd = read_message(&mut r)?;
            let cmd = String::from_utf8_lossy(&cmd).into_owned();
            let _ = writeln!(log, "received command: {{{cmd}}}");
            match cmd.as_str() {
                "GET_WELCOME" => write_message(&mut w, b"Hello World!")?,
                "QUERY_FLATBUF" => {
                    let answer: &[u8] = if self.loadable.is_some() {
                        b"YES"
                    } else {
                        b"NO"
                    };
                    write_message(&mut w, answer)?
                }
                "READ_FLATBUF" => self.loadable = Some(read_message(&mut r)?),
                "RUN_FLATBUF" => {
                    let reply = self.execute(None, log);
                    write_message(&mut w, reply)?
                }
                "GET_NUMOUTPUTS" => {
                    write_message(&mut w, self.outputs.len().to_string().as_bytes())?
                }
                "GET_OUTPUT" => {
                    let index = read_message(&mut r)?;
                    let text = String::from_utf8_lossy(&index);
                    let output = text
                        .trim_matches(|c: char| c.is_whitespace() || c == '\0')
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| self.outputs.get(i));
                    // No such output: the empty message `0\n`, the protocol's only way to
                    // say so (see the module documentation).
                    let data = match output {
                        Some(o) => o.write(),
                        None => {
                            let _ = writeln!(
                                log,
                                "error: GET_OUTPUT {text}: no such output ({} after the last run); \
                                 answering with an empty message",
                                self.outputs.len()
                            );
                            Vec::new()
                        }
                    };
                    write_message(&mut w, &data)?
                }
                "SHUTDOWN" => {
                    self.running = false;
                    write_message(&mut w, b"ACK_SHUTDOWN")?
                }
                c if c.contains("RUN_IMAGE") => {
                    let name = c.rsplit('_').next().unwrap_or("image");
                    let name = std::path::Path::new(name)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "image".into());
                    let data = read_message(&mut r)?;
                    let path = self.image_dir.join(name);
                    std::fs::write(&path, data)?;
                    let reply = self.execute(Some(path.clone()), log);
                    // The image was for this run only.
                    let _ = std::fs::remove_file(&path);
                    write_message(&mut w, reply)?
                }
                other => return Err(bad(&format!("invalid command '{other}'"))),
            }
        }
        Ok(())
    }
}

/// Serves clients on `args.port` until one sends `SHUTDOWN`.
pub fn serve(
    args: &Args,
    dev: &mut dyn Device,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), AppError> {
    let listener = TcpListener::bind(("0.0.0.0", args.port))
        .map_err(|e| AppError(format!("cannot listen on port {}: {e}", args.port)))?;
    serve_on(listener, args, dev, out, err)
}

/// A new directory for received images, private to one server: named by process and a
/// per-process counter, and created (not reused) so that two servers never share one and
/// one's shutdown cannot delete the other's files.
fn private_dir() -> Result<PathBuf, AppError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = std::env::temp_dir();
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = base.join(format!("nvdla-runtime-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(AppError(format!("cannot create {}: {e}", dir.display()))),
        }
    }
    Err(AppError(format!(
        "cannot create a private image directory in {}",
        base.display()
    )))
}

/// Serves clients on an already bound listener until one sends `SHUTDOWN`.
pub fn serve_on(
    listener: TcpListener,
    args: &Args,
    dev: &mut dyn Device,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), AppError> {
    let image_dir = private_dir()?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(args.port);
    let _ = writeln!(out, "listening at port:{port}");
    let _ = writeln!(out, "Ready for Client Connection...");
    let _ = out.flush();
    let mut session = Session {
        args,
        dev,
        loadable: None,
        outputs: Vec::new(),
        image_dir: image_dir.clone(),
        running: true,
    };
    while session.running {
        let (stream, peer) = listener
            .accept()
            .map_err(|e| AppError(format!("accept failed: {e}")))?;
        let _ = writeln!(err, "client connected from {peer}");
        if let Err(e) = session.connection(stream, err) {
            let _ = writeln!(err, "connection ended: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&image_dir);
    Ok(())
}
