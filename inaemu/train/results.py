"""What one training run of one algorithm produced, whichever network ran it.

Per iteration (`rows`): the mean over workers of the local minibatch loss (the loss curve), the
iteration's time (the slowest worker's: all-reduce keeps them in step), its compute and
communication parts, and traffic. Per evaluation point (`evals`): rank 0's model on the whole
training set and on the test set. Times are wall seconds on Mininet; in the simulator compute is
measured for real and communication is virtual (the simulator's clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROW_FIELDS = ("algo", "net", "iteration", "loss", "iteration_s", "compute_s", "comm_s",
              "time_s", "bytes_sent", "retransmissions")
EVAL_FIELDS = ("algo", "net", "iteration", "time_s", "train_loss", "test_loss",
               "test_accuracy")


@dataclass
class TrainResult:
    algo: str
    net: str
    workers: int
    parameters: int = 0
    rows: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0            # the whole run of this algorithm, set-up included
    kernel_retransmissions: int = 0   # Mininet host algorithms: the hosts' TCP (all the run)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.rows)

    def add_times(self) -> None:
        """Fill the cumulative `time_s` of every row and evaluation (end of that iteration)."""
        elapsed, at = 0.0, {0: 0.0}
        for row in self.rows:
            elapsed += row["iteration_s"]
            row["time_s"] = elapsed
            at[row["iteration"] + 1] = elapsed
        for point in self.evals:
            point["time_s"] = at.get(point["iteration"])

    def summary(self) -> dict:
        """One line of the final table."""
        rows = self.rows
        total = sum(r["iteration_s"] for r in rows)
        comm = sum(r["comm_s"] for r in rows)
        final = self.evals[-1] if self.evals else {}
        return {
            "algo": self.algo, "net": self.net, "workers": self.workers,
            "parameters": self.parameters, "iterations": len(rows),
            "iteration_ms": 1000 * total / len(rows) if rows else None,
            "compute_ms": 1000 * (total - comm) / len(rows) if rows else None,
            "comm_ms": 1000 * comm / len(rows) if rows else None,
            "comm_share": comm / total if total > 0 else None,
            "train_time_s": total if rows else None,
            "final_batch_loss": rows[-1]["loss"] if rows else None,
            "final_train_loss": final.get("train_loss"),
            "test_loss": final.get("test_loss"),
            "test_accuracy": final.get("test_accuracy"),
            "bytes_sent_per_iteration": (sum(r["bytes_sent"] for r in rows) / len(rows)
                                         if rows else None),
            "retransmissions": sum(r["retransmissions"] for r in rows)
                               + self.kernel_retransmissions,
            "wall_s": self.wall_s, "error": self.error,
        }
