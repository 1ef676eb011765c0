//! Server mode driven as upstream's regression client drives it.

mod common;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};

use clap::Parser;
use nvdla_umd::app::Args;
use nvdla_umd::device::MockDevice;
use nvdla_umd::server::{read_message, serve_on, write_message};

#[test]
fn regression_client_protocol() {
    let Some(shared) = common::shared("regression_client_protocol") else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let args = Args::try_parse_from(["nvdla-runtime", "-s", "--device", "mock"]).unwrap();
        let mut dev = MockDevice::new();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        serve_on(listener, &args, &mut dev, &mut out, &mut err).unwrap();
        String::from_utf8(err).unwrap()
    });
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut ask = |cmd: &[u8], r: &mut BufReader<TcpStream>| {
        write_message(&mut w, cmd).unwrap();
        read_message(r).unwrap()
    };
    assert_eq!(ask(b"GET_WELCOME", &mut r), b"Hello World!");
    assert_eq!(ask(b"QUERY_FLATBUF", &mut r), b"NO");
    // READ_FLATBUF has no reply; send the command and the loadable back to back.
    let mut raw = r.get_ref().try_clone().unwrap();
    write_message(&mut raw, b"READ_FLATBUF").unwrap();
    write_message(&mut raw, &common::nn_l0_0(&shared)).unwrap();
    assert_eq!(ask(b"QUERY_FLATBUF", &mut r), b"YES");
    assert_eq!(ask(b"RUN_FLATBUF", &mut r), b"[OK] Test PASSED!");
    assert_eq!(ask(b"GET_NUMOUTPUTS", &mut r), b"1");
    write_message(&mut raw, b"GET_OUTPUT").unwrap();
    let dimg = ask(b"0", &mut r);
    assert_eq!(&dimg[..4], b"DIMG");
    assert_eq!(dimg.len(), 36 + 20);
    // An image run: a file of the wrong size fails the test, the server keeps going.
    write_message(&mut raw, b"RUN_IMAGE_tiny.pgm").unwrap();
    let reply = ask(b"P5\n2 2\n255\n\x01\x02\x03\x04", &mut r);
    assert_eq!(reply, b"[OK] Test FAILED!");
    let digit = std::fs::read(shared.join("nvdla-sw-regression/images/digits/eight.pgm")).unwrap();
    write_message(&mut raw, b"RUN_IMAGE_eight.pgm").unwrap();
    assert_eq!(ask(&digit, &mut r), b"[OK] Test PASSED!");
    assert_eq!(ask(b"SHUTDOWN", &mut r), b"ACK_SHUTDOWN");
    raw.flush().unwrap();
    let log = server.join().unwrap();
    assert!(log.contains("image is 2x2"), "{log}");
}

/// The regression client's sequence (welcome, send loadable, run, fetch output) against
/// the built-in virtual platform: the output is the golden `.dimg`, byte for byte.
#[test]
fn regression_client_runs_a_loadable_on_the_vp() {
    let Some(shared) = common::shared("regression_client_runs_a_loadable_on_the_vp") else {
        return;
    };
    let test = "SDP_X1_L0_0";
    let loadable =
        std::fs::read(shared.join(format!("nvdla-sw-regression/flatbufs/kmd/SDP/{test}_fbuf")))
            .unwrap();
    let golden = common::golden(&shared, test).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let args = Args::try_parse_from(["nvdla-runtime", "-s"]).unwrap();
        let mut dev = nvdla_port::vp::VpDevice::new(nvdla_port::vp::VpConfig::NvFull);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        serve_on(listener, &args, &mut dev, &mut out, &mut err).unwrap();
    });
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut raw = s.try_clone().unwrap();
    // Commands without a reply go through their own handle.
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut ask = |cmd: &[u8]| {
        write_message(&mut raw, cmd).unwrap();
        read_message(&mut r).unwrap()
    };
    assert_eq!(ask(b"GET_WELCOME"), b"Hello World!");
    write_message(&mut w, b"READ_FLATBUF").unwrap();
    write_message(&mut w, &loadable).unwrap();
    assert_eq!(ask(b"QUERY_FLATBUF"), b"YES");
    assert_eq!(ask(b"RUN_FLATBUF"), b"[OK] Test PASSED!");
    assert_eq!(ask(b"GET_NUMOUTPUTS"), b"1");
    write_message(&mut w, b"GET_OUTPUT").unwrap();
    assert_eq!(ask(b"0"), golden, "server output equals the golden dimg");
    assert_eq!(ask(b"SHUTDOWN"), b"ACK_SHUTDOWN");
    server.join().unwrap();
}

/// A client that speaks the protocol the way NVIDIA's `dla_client.py` does: every message is
/// its length in decimal, a newline, then the bytes; a length of 0 is an empty message (its
/// client accepts one, where our `read_message` refuses it).
struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn connect(port: u16) -> Self {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        Client {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
        }
    }

    fn send(&mut self, data: &[u8]) {
        self.w
            .write_all(format!("{}\n", data.len()).as_bytes())
            .unwrap();
        self.w.write_all(data).unwrap();
        self.w.flush().unwrap();
    }

    /// The next message; `None` when the server closed the connection.
    fn receive(&mut self) -> Option<Vec<u8>> {
        use std::io::Read;
        let mut size = Vec::new();
        loop {
            let mut b = [0u8; 1];
            if self.r.read(&mut b).ok()? == 0 {
                return None;
            }
            if b[0] == b'\n' {
                break;
            }
            size.push(b[0]);
        }
        let n: usize = String::from_utf8(size).unwrap().parse().unwrap();
        let mut data = vec![0u8; n];
        self.r.read_exact(&mut data).ok()?;
        Some(data)
    }

    fn ask(&mut self, cmd: &str) -> Vec<u8> {
        self.send(cmd.as_bytes());
        self.receive().expect("a reply")
    }

    /// `READ_FLATBUF` and the loadable: no reply.
    fn read_flatbuf(&mut self, loadable: &[u8]) {
        self.send(b"READ_FLATBUF");
        self.send(loadable);
    }

    /// `GET_OUTPUT` and the index as text.
    fn output(&mut self, index: &str) -> Vec<u8> {
        self.send(b"GET_OUTPUT");
        self.ask(index)
    }
}

/// The `.dimg` payload (after upstream's 36-byte header), sorted: the layouts of the two
/// networks differ, their value multisets are what the test knows.
fn sorted_payload(dimg: &[u8]) -> Vec<u8> {
    assert_eq!(&dimg[..4], b"DIMG");
    let mut v = dimg[36..].to_vec();
    v.sort_unstable();
    v
}

/// Two clients one after the other, each driving the server as NVIDIA's regression client
/// does (welcome, send the loadable, run, count the outputs, fetch each): the second never
/// sees the first one's loadable or outputs; `GET_OUTPUT` for an output that does not exist
/// is the empty message `0\n` and the connection goes on; an unknown command closes the
/// socket at once; the server then serves the next client.
#[test]
fn clients_do_not_share_loadables_or_outputs() {
    use nvdla_loadable::dla::Layout;
    use nvdla_loadable::examples::{bdma_copy, sdp_relu, DLA1_VERSION};
    let relu = sdp_relu(8, 8, Layout::Current, DLA1_VERSION, None).build();
    let copy = bdma_copy(8, 8).build();
    let ramp: Vec<u8> = (0..2048u32).map(|i| (i % 251) as u8).collect();
    let relu_of_ramp: Vec<u8> = ramp.iter().map(|&b| (b as i8).max(0) as u8).collect();
    let sorted = |mut v: Vec<u8>| {
        v.sort_unstable();
        v
    };

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let args = Args::try_parse_from(["nvdla-runtime", "-s"]).unwrap();
        let mut dev = nvdla_port::vp::VpDevice::new(nvdla_port::vp::VpConfig::NvFull);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        serve_on(listener, &args, &mut dev, &mut out, &mut err).unwrap();
        String::from_utf8(err).unwrap()
    });

    // First client: the regression client's sequence, plus two bad GET_OUTPUTs.
    let mut a = Client::connect(port);
    assert_eq!(a.ask("GET_WELCOME"), b"Hello World!");
    assert_eq!(a.ask("QUERY_FLATBUF"), b"NO");
    a.read_flatbuf(&relu);
    assert_eq!(a.ask("QUERY_FLATBUF"), b"YES");
    assert_eq!(a.ask("RUN_FLATBUF"), b"[OK] Test PASSED!");
    assert_eq!(a.ask("GET_NUMOUTPUTS"), b"1");
    let first = a.output("0");
    assert_eq!(sorted_payload(&first), sorted(relu_of_ramp.clone()));
    assert_eq!(a.output("1"), b"", "out of range: the empty message");
    assert_eq!(a.output("zero"), b"", "not a number: the empty message");
    assert_eq!(
        a.ask("GET_WELCOME"),
        b"Hello World!",
        "the connection goes on"
    );
    drop(a);

    // Second client: nothing of the first one's is left.
    let mut b = Client::connect(port);
    assert_eq!(b.ask("GET_WELCOME"), b"Hello World!");
    assert_eq!(b.ask("QUERY_FLATBUF"), b"NO");
    assert_eq!(b.ask("RUN_FLATBUF"), b"[OK] Test FAILED!");
    assert_eq!(b.ask("GET_NUMOUTPUTS"), b"0");
    assert_eq!(b.output("0"), b"", "no run yet: the empty message");
    // Its own network runs and gives its own output.
    b.read_flatbuf(&copy);
    assert_eq!(b.ask("RUN_FLATBUF"), b"[OK] Test PASSED!");
    assert_eq!(b.ask("GET_NUMOUTPUTS"), b"1");
    let second = b.output("0");
    assert_eq!(sorted_payload(&second), sorted(ramp));
    assert_ne!(first, second);
    // An unknown command: the server closes the socket.
    b.send(b"BOGUS");
    assert_eq!(b.receive(), None, "the server closed the connection");
    drop(b);

    // Third client: served; the second one's loadable is gone too.
    let mut c = Client::connect(port);
    assert_eq!(c.ask("QUERY_FLATBUF"), b"NO");
    assert_eq!(c.ask("SHUTDOWN"), b"ACK_SHUTDOWN");
    let log = server.join().unwrap();
    assert!(log.contains("invalid command 'BOGUS'"), "{log}");
    assert!(log.contains("GET_OUTPUT 1: no such output"), "{log}");
}
