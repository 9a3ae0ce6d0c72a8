#define BOOST_TEST_MODULE cpu_ref
#include <boost/test/unit_test.hpp>
