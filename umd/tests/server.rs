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
