"""The process around the ticks: start-up, scheduler, reload, doctor's checks, the digest."""
