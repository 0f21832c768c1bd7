HXCOMM gmem-accel overlay: appended by scripts/build-qemu.sh; the handler is
HXCOMM registered by hw/gmem-accel/gmem-accel-monitor.c.
    {
        .name       = "gmem-accel",
        .args_type  = "id:s?,ctx:i?,va:l?,size:l?",
        .params     = "[id [ctx [va [size]]]]",
        .help       = "show gmem-accel devices (contexts, queues, counters), "
                      "or context ctx's page table (optionally only "
                      "[va, va + size))",
    },

SRST
  ``info gmem-accel`` [*id* [*ctx* [*va* [*size*]]]]
    Show gmem-accel devices, or one context's device page table.
ERST

    {
        .name       = "gmem-accel-hbm",
        .args_type  = "id:s",
        .params     = "id",
        .help       = "show which context maps which HBM of gmem-accel "
                      "device id, where, with what page size (sharers)",
    },

SRST
  ``info gmem-accel-hbm`` *id*
    Show which contexts map which HBM of a gmem-accel device.
ERST
