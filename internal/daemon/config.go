package daemon

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/flagconfig"
)

// EnvPrefix begins the environment variable of every flag of serve: the
// flag's name in upper case with '-' as '_' follows, so --listen is
// RESERVED_LISTEN and --max-tcp-connections RESERVED_MAX_TCP_CONNECTIONS.
const EnvPrefix = "RESERVED_"

// DefaultConfigFile is the configuration file serve reads where it exists
// unless --config (or RESERVED_CONFIG) names another, or none.
const DefaultConfigFile = "/etc/reserved/reserved.conf"

// configSources says where the flags of serve take the values that the
// command line does not give: the environment, as lookupEnv reads it, and
// the configuration file. Cobra's own flags are no settings.
func configSources(lookupEnv func(string) (string, bool)) flagconfig.Sources {
	return flagconfig.Sources{
		Prefix:     EnvPrefix,
		LookupEnv:  lookupEnv,
		ConfigFlag: "config",
		Ignore:     []string{"help", "version"},
		Fresh: func() *pflag.FlagSet {
			cmd := &cobra.Command{}
			(&serveOptions{}).register(cmd)
			return cmd.Flags()
		},
	}
}

// configure gives the flags of cmd that its command line did not set
// their values from the environment and the configuration file. A bad
// value there is a usage error, so the daemon does not start.
func (o *serveOptions) configure(cmd *cobra.Command) error {
	res, err := configSources(os.LookupEnv).Apply(cmd.Flags())
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	o.configured = res
	return nil
}
