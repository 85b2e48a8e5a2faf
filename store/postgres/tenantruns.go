package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ListTenantRuns returns up to limit run IDs of the tenant greater than
// after, in order: the pages of an operator's rebuild of one tenant, which
// holds one page at a time however many runs the tenant has.
func (s *Store) ListTenantRuns(ctx context.Context, tenantID, after string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs WHERE tenant_id = $1 AND run_id > $2 ORDER BY run_id LIMIT $3`,
		tenantID, after, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("listing the runs of tenant %q after %q: %w", tenantID, after, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(fmt.Errorf("listing the runs of tenant %q after %q: %w", tenantID, after, err))
	}
	return ids, nil
}
