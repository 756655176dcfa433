# pair-fleet-down: pair-fleet's six hosts on a clean switch, h4's link taken down after its device
# came up: rxh4's port goes DOWN (rxe follows its netdev, rxe_port_down in
# drivers/infiniband/sw/rxe/rxe_net.c). Its probes fail before any exchange, at the port check;
# its partners wait at the side channel for a peer that never comes, or dial one that never
# answers. Those early results carry no endpoint, only each end's name and round: `fleet --pairs`,
# holding them against the plan in results/plan.txt, must still put each on its pair and name h4
# the bad host, with no bad link and no planned end missing.
LAB_FLEET_BAD= LAB_FLEET_DOWN=4
LAB_INCLUDE=pair-fleet
