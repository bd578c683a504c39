"""The study's equations (Akram, Marazakis, Bilas, DEBS 2012, section 4.2).

Every function takes plain numbers in SI units (Hz, W, bytes, cycles) and
returns one; nothing here measures anything. reproduce.py feeds them the CPE_p
and CPB_p that sluice measures; model_test.py checks them against values worked
by hand from the study's own examples.

  (1) GB/s     = alpha N F / CPB_p          bytes/s a server streams
  (2) Events/s = alpha N F / CPE_p          events/s a server streams
  (3) EPE      = P (1 CPE_p + 0.7 CPE_i) / (N F)   joules per event

N is cores, F each core's clock, alpha the fraction of cycles spent processing
(the study fixes it at 1 for its infrastructure figures), P the server's peak
power; idle cycles draw 70% of it. Events are counted in and out, as the study
counts them.
"""

import math

JOULES_PER_KWH = 3.6e6
ZETTABYTE = 1e21          # the Digital Universe study's decimal zettabyte
IDLE_POWER_FRACTION = 0.7  # Equation 3: an idle machine draws 70% of peak


def _positive(name, v):
    if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def _nonnegative(name, v):
    if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")


def _alpha(alpha):
    if not (isinstance(alpha, (int, float)) and 0 < alpha <= 1):
        raise ValueError(f"alpha (CPU utilization) must be in (0, 1], got {alpha!r}")


def events_per_s(cpe_p, cores, clock_hz, alpha=1.0):
    """Equation 2: events/s = alpha N F / CPE_p."""
    _positive("cpe_p", cpe_p)
    _positive("cores", cores)
    _positive("clock_hz", clock_hz)
    _alpha(alpha)
    return alpha * cores * clock_hz / cpe_p


def bytes_per_s(cpb_p, cores, clock_hz, alpha=1.0):
    """Equation 1: bytes/s = alpha N F / CPB_p (the study's "GB/s", in bytes)."""
    _positive("cpb_p", cpb_p)
    _positive("cores", cores)
    _positive("clock_hz", clock_hz)
    _alpha(alpha)
    return alpha * cores * clock_hz / cpb_p


def gbytes_per_s(cpb_p, cores, clock_hz, alpha=1.0):
    """Equation 1 in GB/s (1e9 bytes)."""
    return bytes_per_s(cpb_p, cores, clock_hz, alpha) / 1e9


def gbits_per_s(cpb_p, cores, clock_hz, alpha=1.0):
    """Equation 1 in Gb/s (1e9 bits), the unit of the study's Figure 12."""
    return 8 * bytes_per_s(cpb_p, cores, clock_hz, alpha) / 1e9


def cpb_from_cpe(cpe_p, event_bytes):
    """Cycles per byte from cycles per event: CPB_p = CPE_p / bytes per event."""
    _positive("cpe_p", cpe_p)
    _positive("event_bytes", event_bytes)
    return cpe_p / event_bytes


def epe_joules(cpe_p, cpe_i, peak_w, cores, clock_hz):
    """Equation 3: EPE = P (CPE_p + 0.7 CPE_i) / (N F), joules per event."""
    _positive("cpe_p", cpe_p)
    _nonnegative("cpe_i", cpe_i)
    _positive("peak_w", peak_w)
    _positive("cores", cores)
    _positive("clock_hz", clock_hz)
    return peak_w * (cpe_p + IDLE_POWER_FRACTION * cpe_i) / (cores * clock_hz)


def events_for_bytes(total_bytes, event_bytes):
    """How many events of event_bytes carry total_bytes (the study: 32 KB events)."""
    _positive("total_bytes", total_bytes)
    _positive("event_bytes", event_bytes)
    return total_bytes / event_bytes


def kwh_for_bytes(total_bytes, event_bytes, epe_j):
    """kWh to stream total_bytes in events of event_bytes at epe_j joules each
    (Figures 8 and 9)."""
    _nonnegative("epe_j", epe_j)
    return events_for_bytes(total_bytes, event_bytes) * epe_j / JOULES_PER_KWH


def cores_for_rate(rate_events_s, cpe_p, clock_hz, alpha=1.0):
    """Equation 2 solved for N: the cores that stream rate_events_s (Figure 10),
    fractional; doubling the cores doubles the rate, as the study assumes."""
    _positive("rate_events_s", rate_events_s)
    return rate_events_s / events_per_s(cpe_p, 1, clock_hz, alpha)


def servers_for_rate(rate_events_s, cpe_p, clock_hz, cores_per_server=4, alpha=1.0):
    """Whole servers of cores_per_server cores for rate_events_s (Figure 11(b):
    4-core servers, one million events/s per operator)."""
    _positive("cores_per_server", cores_per_server)
    cores = cores_for_rate(rate_events_s, cpe_p, clock_hz, alpha)
    return math.ceil(cores / cores_per_server - 1e-9)


def saving(optimized, baseline):
    """The fraction saved by optimized against baseline (cores, servers, kWh):
    0.4 is the study's "40% in infrastructure cost"."""
    _positive("baseline", baseline)
    _nonnegative("optimized", optimized)
    return 1 - optimized / baseline
