"""Reading TCP's acknowledged-bytes counters out of `ss -Htin` output
(testbed.emulation.measure.acked_by_port), as the goodput measurements do."""

from testbed.emulation.measure import acked_by_port, tcp_counters

SS = """\
0      0      10.0.1.2:5301 10.0.2.3:41002
\t cubic wscale:7,7 rto:220 rtt:20.5/0.3 mss:1448 cwnd:40 bytes_sent:4000000 bytes_acked:3999001 segs_out:9
0      0      10.0.1.2:5301 10.0.2.3:41000
\t cubic wscale:7,7 rto:220 rtt:20.5/0.3 mss:1448 cwnd:40 bytes_sent:900 bytes_acked:901 segs_out:9
0      2896   [::ffff:10.0.1.2]:5303 [::ffff:10.0.3.3]:41010
\t cubic rto:220 bytes_sent:77 bytes_acked:70
0      0      10.0.1.2:22 10.0.9.9:50000
\t cubic rto:220 segs_out:1
"""


def test_each_port_reads_its_busiest_connection_and_v6_mapped_addresses_parse():
    # 5301: iperf3's data connection, then its control connection (901).
    assert acked_by_port(SS) == {5301: 3999001, 5303: 70}


def test_no_connections_read_as_no_counters():
    assert acked_by_port("") == {}


REPAIRING = """\
0      0      10.0.1.2:5201 10.0.2.3:41002
\t bbr wscale:7,7 rto:280 mss:1448 cwnd:60 bytes_sent:9000000 bytes_retrans:2896 bytes_acked:8600000 unacked:270 retrans:1/12 lost:1 sacked:180 reordering:12
0      0      10.0.1.2:5201 10.0.2.3:41000
\t bbr rto:220 bytes_sent:900 bytes_acked:901
"""


def test_a_connection_repairing_a_loss_reports_what_waits_sacked_above_its_count():
    # The data connection has 180 segments SACKed above its in-order count;
    # the control connection is not the busiest and is not read.
    assert tcp_counters(REPAIRING) == {5201: (8600000, 180)}
    assert tcp_counters(SS) == {5301: (3999001, 0), 5303: (70, 0)}
