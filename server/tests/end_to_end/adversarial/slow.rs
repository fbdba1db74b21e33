//! Slow clients: one address opens connection after connection and sends half a head (or a
//! head and half a body), trying to hold every place; a normal client from another address
//! is served throughout. The attacker's address gets at most its share of the places (the
//! rest of its connections are refused at once) and each slow connection is cut at the head
//! or body deadline.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::adversarial::client::{Conn, post, rpc};
use crate::adversarial::raw_http::{MAX_CONNECTIONS, TIMEOUT};

/// Where the slow connections come from (all of 127.0.0.0/8 is loopback on Linux).
const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// A connection to `addr` from `source`.
fn connect_from(source: IpAddr, addr: SocketAddr) -> std::io::Result<std::net::TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        let stream = socket.connect(addr).await?.into_std()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    })
}

pub fn normal_clients_are_served_while_slow_ones_wait(addr: SocketAddr) -> Vec<String> {
    let mut failures = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let opened = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(AtomicUsize::new(0));
    let attacker = {
        let (stop, refused, opened, cut) = (
            Arc::clone(&stop),
            Arc::clone(&refused),
            Arc::clone(&opened),
            Arc::clone(&cut),
        );
        std::thread::spawn(move || {
            let mut held: Vec<Conn> = Vec::new();
            let mut turn = 0usize;
            while !stop.load(Ordering::Relaxed) {
                // Drop what the server closed; keep trying to hold every place.
                held.retain_mut(|conn| {
                    let closed = conn.closed_within(Duration::from_millis(1));
                    if closed {
                        cut.fetch_add(1, Ordering::Relaxed);
                    }
                    !closed
                });
                if held.len() >= MAX_CONNECTIONS {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                // A burst up to every place, then a look at which were refused at once.
                let mut fresh = Vec::new();
                while held.len() + fresh.len() < MAX_CONNECTIONS {
                    let Ok(stream) = connect_from(ATTACKER, addr) else {
                        break;
                    };
                    let mut conn = Conn::over(stream);
                    opened.fetch_add(1, Ordering::Relaxed);
                    turn += 1;
                    let _ = if turn.is_multiple_of(2) {
                        conn.send(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic")
                    } else {
                        conn.send(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
                    };
                    fresh.push(conn);
                }
                std::thread::sleep(Duration::from_millis(20));
                for mut conn in fresh {
                    conn.stream
                        .set_read_timeout(Some(Duration::from_millis(5)))
                        .expect("timeout");
                    let mut first = [0u8; 12];
                    match std::io::Read::read(&mut conn.stream, &mut first) {
                        Ok(n) if first[..n].starts_with(b"HTTP/1.1 503") => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => held.push(conn),
                    }
                }
            }
        })
    };
    // The attacker fills its share first.
    std::thread::sleep(TIMEOUT / 2);
    let started = Instant::now();
    let mut served = 0;
    while started.elapsed() < TIMEOUT * 3 {
        let response =
            Conn::open(addr).exchange(&post("/", &rpc("GetTask", r#"{"id":"adv-slow"}"#), &[]));
        match response {
            Some(r) if r.status == 200 && r.rpc_code() == Some(-32001) => served += 1,
            other => failures.push(format!(
                "[slow clients] a normal request after {:?}: {other:?}",
                started.elapsed()
            )),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().expect("the attacker's thread");
    let (refused, opened) = (
        refused.load(Ordering::Relaxed),
        opened.load(Ordering::Relaxed),
    );
    let cut = cut.load(Ordering::Relaxed);
    if refused == 0 {
        failures.push(format!(
            "[slow clients] none of {opened} slow connections was refused: one address held every place"
        ));
    }
    if served == 0 {
        failures.push("[slow clients] no normal request was made".to_owned());
    }
    if cut == 0 {
        failures.push(format!(
            "[slow clients] none of {opened} slow connections was cut at its deadline"
        ));
    }
    failures
}
