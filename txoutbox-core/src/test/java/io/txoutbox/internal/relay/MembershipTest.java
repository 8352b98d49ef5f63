package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class MembershipTest {

    @Test
    void equal_members_split_the_lanes_and_every_lane_has_a_taker() {
        assertThat(Membership.share(8, List.of(8, 8), 8)).isEqualTo(4);
        assertThat(Membership.share(8, List.of(8, 8, 8), 8)).isEqualTo(3);
        assertThat(Membership.share(2, List.of(2, 2, 2), 2)).isEqualTo(1);
        assertThat(Membership.share(4, List.of(4), 4)).isEqualTo(4);
    }

    @Test
    void capped_members_take_their_cap_and_the_others_share_the_rest() {
        assertThat(Membership.share(4, List.of(1, 4), 4)).isEqualTo(3);
        assertThat(Membership.share(4, List.of(1, 4), 1)).isEqualTo(1);
        assertThat(Membership.share(10, List.of(2, 2, 10), 10)).isEqualTo(6);
    }

    @Test
    void caps_that_leave_lanes_without_a_taker_take_all_they_may() {
        assertThat(Membership.share(8, List.of(2, 2), 2)).isEqualTo(2);
    }
}
