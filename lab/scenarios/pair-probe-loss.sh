# pair-probe-loss: pair-probe's two hosts with a wire that loses every RoCE frame (tc netem loss
# 100% on both ends of the fabric veth pair; the TCP side channel runs on its own pair and is
# untouched; the ends know each other's MAC, as after a ping before the wire went bad): the QPs
# connect (RTR and RTS send nothing), and no RDMA WRITE is ever acknowledged. Hardware completes
# the write with IBV_WC_RETRY_EXC_ERR once its retries are spent; rxe of 6.1 keeps retransmitting,
# so the probe meets its deadline. Either way it must fail at its write stage and name a lossy path.
: "${LAB_PAIR_LOSS:=100}"
LAB_INCLUDE=pair-probe
