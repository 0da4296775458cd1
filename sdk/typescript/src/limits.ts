/** Where `queues serve` listens by default. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';
/** Most messages in one send or receive. */
export const MAX_BATCH = 10;
/** Most entries in one batch receipt call. */
export const MAX_RECEIPT_BATCH = 100;
